/**
 * A grammar constraint whose matcher lives in a grammar worker: the engine's TokenConstraint, answered
 * by synchronous calls (about 40 µs each). The state after each call (done, complete, the next mask) is
 * kept here, so a step asks the worker about twice per token: accept, and forced tokens.
 */
import type { TokenConstraint } from '../../types.ts';
import { StateFlag, SyncOp } from './messages.ts';
import type { Answer } from './sync-channel.ts';
import { GrammarInputError } from '../errors.ts';
import { CallTimeout, type GrammarWorker } from './worker-handle.ts';

export class RemoteConstraint implements TokenConstraint {
  private readonly words: Uint32Array;
  private maskFresh = false;
  private stateFresh = false;
  private done = false;
  private isComplete = false;
  private failure: string | undefined;
  private disposed = false;

  /** Set when a call of ours timed out: the matcher's state is unknown from then on. */
  private broken: Error | undefined;

  constructor(
    private readonly worker: GrammarWorker,
    private readonly cid: number,
    vocabSize: number,
    /** The grammar spec's part (`schema`, `tools`...) to blame when following it is too slow. */
    private readonly param: string,
  ) {
    this.words = new Uint32Array(Math.ceil(vocabSize / 32));
    worker.live++;
  }

  hold(): boolean {
    return this.worker.tryHold();
  }

  release(): void {
    this.worker.release();
  }

  whenReady(): Promise<void> {
    return this.worker.whenHoldable();
  }

  mask(): Uint32Array {
    if (!this.maskFresh) this.take(this.call(SyncOp.Mask, 0));
    return this.words;
  }

  accept(token: number): void {
    this.maskFresh = false;
    this.stateFresh = false;
    this.take(this.call(SyncOp.Accept, token));
  }

  isDone(): boolean {
    if (this.disposed) return true;
    if (!this.stateFresh) this.take(this.call(SyncOp.IsDone, 0));
    return this.done;
  }

  forcedTokens(limit = 32): number[] {
    if (this.done || limit <= 0) return [];
    const a = this.call(SyncOp.Forced, limit);
    return Array.from(new Int32Array(a.payload.buffer.slice(a.payload.byteOffset, a.payload.byteOffset + a.payload.byteLength)));
  }

  /** Why the grammar cannot go on (no token can continue it), or undefined; known without a call. */
  get deadEnd(): string | undefined {
    return this.failure;
  }

  get complete(): boolean {
    return this.isComplete;
  }

  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.worker.dispose(this.cid);
  }

  /** One call; a timeout fails this constraint for good (as the caller's input: the grammar is too slow to follow). */
  private call(op: SyncOp, arg: number): Answer {
    if (this.broken) throw this.broken;
    try {
      return this.worker.call(op, this.cid, arg);
    } catch (e) {
      if (!(e instanceof CallTimeout)) throw e;
      this.broken = new GrammarInputError(`${this.param}: following it is too slow: ${e.message}; simplify it (nested repetition in a pattern, such as (a*)*, is the usual cause)`, this.param);
      throw this.broken;
    }
  }

  private take(a: Answer): void {
    this.done = (a.flags & StateFlag.Done) !== 0;
    this.isComplete = (a.flags & StateFlag.Complete) !== 0;
    this.stateFresh = true;
    if (a.flags & StateFlag.HasMask) {
      new Uint8Array(this.words.buffer).set(a.payload.subarray(0, this.words.byteLength));
      this.maskFresh = true;
    }
    if (a.flags & StateFlag.DeadEnd && this.failure === undefined) {
      // Fetched now, while the step holds the worker: reading `deadEnd` later must not call it.
      this.failure = new TextDecoder().decode(this.call(SyncOp.DeadEnd, 0).payload);
    }
  }
}
