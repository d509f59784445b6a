/** The consumer side of one generation: an async iterator over chunks plus a result promise. */
import type { Generation, GenerationChunk, GenerationResult } from '../types.ts';

export class ChunkQueue implements Generation {
  private readonly items: GenerationChunk[] = [];
  private waiter: (() => void) | undefined;
  private ended = false;
  private failure: unknown;
  readonly result: Promise<GenerationResult>;
  private settle!: { resolve: (r: GenerationResult) => void; reject: (e: unknown) => void };

  constructor() {
    this.result = new Promise<GenerationResult>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // A caller that only iterates must not get an unhandled rejection from `result`.
    this.result.catch(() => {});
  }

  push(chunk: GenerationChunk): void {
    this.items.push(chunk);
    this.wake();
  }

  finish(result: GenerationResult): void {
    this.ended = true;
    this.settle.resolve(result);
    this.wake();
  }

  fail(error: unknown): void {
    this.ended = true;
    this.failure = error;
    this.settle.reject(error);
    this.wake();
  }

  private wake(): void {
    const w = this.waiter;
    this.waiter = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<GenerationChunk> {
    for (;;) {
      const next = this.items.shift();
      if (next) {
        yield next;
        continue;
      }
      if (this.ended) {
        if (this.failure !== undefined) throw this.failure;
        return;
      }
      await new Promise<void>((r) => (this.waiter = r));
    }
  }
}
