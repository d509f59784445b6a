/** Let the thread's queued work (I/O callbacks, timers) run: setImmediate where it exists (Node), else a task. */
export function yieldToHost(): Promise<void> {
  const g = globalThis as { setImmediate?: (fn: () => void) => void };
  return new Promise((resolve) => (g.setImmediate ? g.setImmediate(resolve) : setTimeout(resolve, 0)));
}
