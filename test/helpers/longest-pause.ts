/**
 * How long the thread that runs `work` was kept from its other work: the largest gap between ticks of
 * a 5 ms interval while `work` is pending. Platform-free (used in Node and in browser bundles).
 */
export async function longestPause<T>(work: () => Promise<T>): Promise<{ gap: number; result: PromiseSettledResult<T> }> {
  let last = performance.now();
  let gap = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    gap = Math.max(gap, now - last);
    last = now;
  }, 5);
  const [result] = await Promise.allSettled([work()]);
  clearInterval(timer);
  return { gap, result };
}
