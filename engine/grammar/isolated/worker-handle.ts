/**
 * The main thread's handle on one grammar worker: jobs with replies (optionally under a time limit),
 * synchronous per-token calls, and the rule that keeps the two apart.
 *
 * A worker runs one thing at a time, so a per-token call made while it compiles would block the main
 * thread for the whole compile. Hence: the engine holds the worker for the length of a step (tryHold,
 * release) and makes per-token calls only then; a job waits until no step holds the worker, and while a
 * job is pending or running tryHold() says no and the step leaves those sequences out.
 */
import { GrammarEngineError } from '../errors.ts';
import { type Job, type JobReply, type SerializedError, type SyncOp, StateFlag, type WorkerInit } from './messages.ts';
import { ChannelCaller, ChannelTimeout, STATUS_ERROR, type Answer } from './sync-channel.ts';

/** The part of a worker (worker_threads or a browser Worker wrapped alike) the host uses. */
export interface GrammarWorkerLike {
  postMessage(message: unknown): void;
  onMessage(handler: (message: unknown) => void): void;
  /** Called once if the worker dies on its own (crash, out of memory) with why. */
  onExit(handler: (why: string) => void): void;
  terminate(): void;
}

export type SpawnGrammarWorker = (init: WorkerInit) => GrammarWorkerLike;

export class JobTimeout extends Error {}
/** A per-token call got no answer in time; the caller's generation fails, the worker goes on. */
export class CallTimeout extends Error {}

/** How long a timed-out call may go on running before the worker is replaced. */
const STALL_LIMIT_MS = 30_000;
export class WorkerGone extends Error {}

type JobBody = Job extends infer J ? (J extends { id: number } ? Omit<J, 'id'> : never) : never;

export class GrammarWorker {
  private readonly worker: GrammarWorkerLike;
  private readonly caller: ChannelCaller;
  private readonly replies = new Map<number, { resolve: (r: JobReply) => void; reject: (e: Error) => void }>();
  private nextJob = 1;
  private holds = 0;
  private jobsPending = 0;
  private waiters: Array<() => void> = [];
  private readyFlag = false;
  /** A per-token call timed out and is still running in the worker. */
  private stalled = false;
  readonly ready: Promise<void>;
  /** Why the worker is gone (crashed, hung, terminated), or undefined while it lives. */
  gone: string | undefined;
  /** Tainted (its xgrammar trapped or aborted): it finishes what it serves and takes nothing new. */
  retiring = false;
  /** Constraints started on this worker and not disposed yet. */
  live = 0;

  constructor(
    spawn: SpawnGrammarWorker,
    init: Omit<WorkerInit, 'channel'>,
    private readonly channel: SharedArrayBuffer,
    private readonly callTimeoutMs: number,
  ) {
    this.caller = new ChannelCaller(channel);
    this.worker = spawn({ ...init, channel });
    this.ready = new Promise<void>((resolve, reject) => {
      this.worker.onMessage((m) => {
        const msg = m as { kind?: string; id?: number; message?: string };
        if (msg.kind === 'ready') {
          this.readyFlag = true;
          this.wake();
          resolve();
        } else if (msg.kind === 'failed') {
          this.kill(`it failed to start: ${msg.message}`);
          reject(new GrammarEngineError(`the grammar worker failed to start: ${msg.message}`));
        } else if (typeof msg.id === 'number') {
          const r = m as JobReply;
          if (r.tainted) this.retiring = true;
          this.replies.get(r.id)?.resolve(r);
          this.replies.delete(r.id);
        }
      });
      this.worker.onExit((why) => {
        reject(new GrammarEngineError(`the grammar worker exited before it was ready: ${why}`));
        this.kill(why);
      });
    });
    this.ready.catch(() => {});
  }

  /** Usable for new work. */
  get usable(): boolean {
    return this.gone === undefined && !this.retiring;
  }

  /**
   * Run a job once no step holds the worker. With `timeoutMs`, a job still running then kills the worker
   * (wasm cannot be interrupted otherwise) and rejects with JobTimeout.
   */
  async job(body: JobBody, timeoutMs?: number): Promise<JobReply> {
    this.jobsPending++;
    try {
      await this.ready;
      while (this.holds > 0 && this.gone === undefined) await new Promise<void>((r) => this.waiters.push(r));
      if (this.gone !== undefined) throw new WorkerGone(this.gone);
      const id = this.nextJob++;
      const reply = new Promise<JobReply>((resolve, reject) => this.replies.set(id, { resolve, reject }));
      this.worker.postMessage({ ...body, id });
      if (timeoutMs === undefined) return await reply;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new JobTimeout(`no reply within ${timeoutMs} ms`));
          this.kill(`a job ran past its ${timeoutMs} ms budget`);
        }, timeoutMs);
      });
      try {
        return await Promise.race([reply, timeout]);
      } finally {
        clearTimeout(timer);
      }
    } finally {
      this.jobsPending--;
      this.wake();
    }
  }

  /**
   * A call that timed out is still running in the worker (wasm cannot be interrupted). Only its own
   * generation fails; the others on this worker sit out steps until it finishes, and only if it never
   * does (STALL_LIMIT_MS) is the worker replaced, failing them too.
   */
  private stall(seq: number): void {
    this.stalled = true;
    const since = performance.now();
    const timer = setInterval(() => {
      if (this.caller.answered(seq) || this.gone !== undefined) {
        clearInterval(timer);
        this.stalled = false;
        this.wake();
      } else if (performance.now() - since > STALL_LIMIT_MS) {
        clearInterval(timer);
        this.stalled = false;
        this.kill(`a per-token call ran for more than ${STALL_LIMIT_MS / 1000} s`);
      }
    }, 10);
  }

  /** Pin the worker for one engine step; false while it is busy with a job (leave the sequence out). */
  tryHold(): boolean {
    if (this.gone !== undefined) return true; // calls will fail fast; the step must not wait for it
    if (!this.readyFlag || this.jobsPending > 0 || this.stalled) return false;
    this.holds++;
    return true;
  }

  release(): void {
    if (this.holds > 0 && --this.holds === 0) this.wake();
  }

  /** Resolves when tryHold() may succeed again. */
  whenHoldable(): Promise<void> {
    if (this.gone !== undefined || (this.readyFlag && this.jobsPending === 0 && !this.stalled)) return Promise.resolve();
    return new Promise<void>((r) => this.waiters.push(r));
  }

  /** A per-token call. Throws GrammarEngineError if the worker is gone, hangs past the timeout, or the call fails. */
  call(op: SyncOp, cid: number, arg: number): Answer {
    if (this.gone !== undefined) throw new GrammarEngineError(`the grammar worker is gone (${this.gone})`);
    const seq = this.caller.next();
    this.worker.postMessage({ kind: 'sync', seq, op, cid, arg });
    let answer: Answer;
    try {
      answer = this.caller.wait(seq, this.callTimeoutMs);
    } catch (e) {
      if (!(e instanceof ChannelTimeout)) throw e;
      this.stall(seq);
      throw new CallTimeout(`one token took longer than ${this.callTimeoutMs} ms to check`);
    }
    if (answer.flags & StateFlag.Tainted) this.retiring = true;
    if (answer.status === STATUS_ERROR) {
      const err = JSON.parse(new TextDecoder().decode(answer.payload)) as SerializedError;
      throw new GrammarEngineError(err.message);
    }
    return answer;
  }

  dispose(cid: number): void {
    this.live--;
    if (this.gone === undefined) this.worker.postMessage({ kind: 'dispose', cid });
    if (this.retiring && this.live <= 0) this.kill('retired after its grammar runtime failed');
  }

  /** Stop the worker now; pending jobs reject with WorkerGone. */
  kill(why: string): void {
    if (this.gone !== undefined) return;
    this.gone = why;
    this.worker.terminate();
    for (const { reject } of this.replies.values()) reject(new WorkerGone(why));
    this.replies.clear();
    this.wake();
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }
}
