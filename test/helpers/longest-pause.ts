/**
 * How freely the thread that runs `work` went on with other work meanwhile: ticks of a 5 ms interval
 * while `work` is pending, against the ticks it could have had, and the largest gap between two ticks.
 * A thread blocked by the work gets no ticks for as long as the work runs; a busy machine only spreads
 * them out, so tests assert on the tick ratio and bound the gap loosely. Platform-free (Node and browser
 * bundles).
 */
export async function longestPause<T>(work: () => Promise<T>): Promise<{ gap: number; tickRatio: number; result: PromiseSettledResult<T> }> {
  const start = performance.now();
  let last = start;
  let gap = 0;
  let ticks = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
    ticks++;
  }, 5);
  const [result] = await Promise.allSettled([work()]);
  clearInterval(timer);
  gap = Math.max(gap, performance.now() - last);
  return { gap, tickRatio: ticks / ((performance.now() - start) / 5), result };
}
