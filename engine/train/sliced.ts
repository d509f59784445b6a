/**
 * Work that grows with what a caller sent (checking a 16 MiB training file, tokenizing every conversation)
 * is written once as a generator that pauses after each item, then run either straight through (the CLI)
 * or in slices that give the thread back between them (a server, where other callers wait on the same
 * event loop).
 */
import { yieldToHost } from '../platform/yield.ts';

/** Runs the generator to its end in one go. */
export function runThrough<T>(work: Generator<void, T, void>): T {
  let r = work.next();
  while (!r.done) r = work.next();
  return r.value;
}

/** Runs the generator, yielding to the event loop whenever `sliceMs` has passed since the last yield. */
export async function runSliced<T>(work: Generator<void, T, void>, sliceMs = 8): Promise<T> {
  let sliceStart = performance.now();
  let r = work.next();
  while (!r.done) {
    if (performance.now() - sliceStart >= sliceMs) {
      await yieldToHost();
      sliceStart = performance.now();
    }
    r = work.next();
  }
  return r.value;
}
