/**
 * Inside a grammar worker: one xgrammar instance, one vocabulary, the grammars compiled for it and the
 * constraints (matchers) of the generations it serves. Platform-free; worker-node.ts wires it to
 * worker_threads.
 *
 * A wasm trap or abort leaves the instance suspect (its stack and heap may be corrupt), so from then on
 * every answer carries the Tainted flag and the host sends this worker no new work.
 */
import { compileGrammar, paramOf } from '../compile.ts';
import type { GrammarConstraint } from '../constraint.ts';
import { GrammarInputError } from '../errors.ts';
import { TokenTable } from '../token-table.ts';
import { grammarVocabulary } from '../vocabulary.ts';
import { xgrammarRuntime } from '../xgrammar.ts';
import { StateFlag, SyncOp, type Job, type JobReply, type SerializedError, type WorkerInit, type WorkerMessage } from './messages.ts';
import { probeMatching } from './match-probe.ts';
import { ChannelAnswerer, STATUS_ERROR, STATUS_OK } from './sync-channel.ts';

export interface WorkerPort {
  post(message: unknown): void;
  onMessage(handler: (message: WorkerMessage) => void): void;
}

/** Set by the memory cap (see capWasmMemory) when xgrammar asked for more than the budget. */
let memoryRefused = 0;

/**
 * Make wasm memory growth past `bytes` fail. Emscripten treats a failed grow as out of memory: the
 * allocation fails and xgrammar aborts, which fails the one job or call that asked.
 */
export function capWasmMemory(bytes: number): void {
  const proto = WebAssembly.Memory.prototype;
  const grow = proto.grow;
  proto.grow = function (this: WebAssembly.Memory, pages: number): number {
    if (this.buffer.byteLength + pages * 65536 > bytes) {
      memoryRefused = bytes;
      throw new RangeError(`the grammar memory budget of ${Math.round(bytes / 2 ** 20)} MiB is exhausted`);
    }
    return grow.call(this, pages);
  };
}

export async function serveGrammarWorker(init: WorkerInit, port: WorkerPort): Promise<void> {
  const table = new TokenTable(init.table);
  const answerer = new ChannelAnswerer(init.channel);
  const constraints = new Map<number, GrammarConstraint>();
  let nextCid = 1;
  let tainted = false;
  const rt = await xgrammarRuntime();
  await grammarVocabulary(table);

  const noteFailure = (e: unknown): void => {
    if (isTrap(e) || rt.tainted || memoryRefused > 0) tainted = true;
  };
  const serialize = (e: unknown): SerializedError => {
    const err = e instanceof Error ? e : new Error(String(e));
    const budget = memoryRefused > 0 ? ` (the grammar memory budget of ${Math.round(memoryRefused / 2 ** 20)} MiB is exhausted)` : '';
    return { name: err.name, message: err.message + budget, param: err instanceof GrammarInputError ? err.param : undefined };
  };

  const runJob = async (job: Job): Promise<JobReply> => {
    try {
      const grammar = await compileGrammar(table, job.spec);
      if (job.kind === 'compile' && job.probe) await probeMatching(grammar, job.probe, paramOf(job.spec));
      if (job.kind === 'compile') return { id: job.id, ok: true, warnings: [...grammar.warnings], compileMs: grammar.compileMs, tainted };
      const c = await grammar.createConstraint({ maxTokens: job.maxTokens });
      const cid = nextCid++;
      constraints.set(cid, c);
      return { id: job.id, ok: true, warnings: [...grammar.warnings], compileMs: grammar.compileMs, cid, tainted };
    } catch (e) {
      noteFailure(e);
      return { id: job.id, ok: false, error: serialize(e), tainted };
    }
  };

  const syncCall = (seq: number, op: SyncOp, cid: number, arg: number): void => {
    const out = answerer.payload;
    try {
      const c = constraints.get(cid);
      if (!c) throw new Error(`constraint ${cid} is not known to this grammar worker`);
      let length = 0;
      let flags = 0;
      if (op === SyncOp.Forced) {
        const tokens = c.forcedTokens(arg);
        new Int32Array(out.buffer, out.byteOffset, tokens.length).set(tokens);
        length = tokens.length * 4;
      } else if (op === SyncOp.DeadEnd) {
        length = new TextEncoder().encodeInto(c.deadEnd ?? '', out).written;
      } else {
        if (op === SyncOp.Accept) c.accept(arg);
        const words = op === SyncOp.Mask ? c.mask() : undefined;
        const done = c.isDone();
        const mask = words ?? (done ? undefined : c.mask());
        if (mask) {
          out.set(new Uint8Array(mask.buffer, mask.byteOffset, mask.byteLength));
          length = mask.byteLength;
          flags |= StateFlag.HasMask;
        }
        if (done) flags |= StateFlag.Done;
        if (c.complete) flags |= StateFlag.Complete;
        if (c.deadEnd !== undefined) flags |= StateFlag.DeadEnd;
      }
      answerer.answer(seq, STATUS_OK, flags | (tainted ? StateFlag.Tainted : 0), length);
    } catch (e) {
      noteFailure(e);
      const length = new TextEncoder().encodeInto(JSON.stringify(serialize(e)), out).written;
      answerer.answer(seq, STATUS_ERROR, tainted ? StateFlag.Tainted : 0, length);
    }
  };

  // Jobs run one after another; sync calls never arrive while a job runs (the host holds them back).
  let jobs: Promise<unknown> = Promise.resolve();
  port.onMessage((m) => {
    switch (m.kind) {
      case 'sync':
        return syncCall(m.seq, m.op, m.cid, m.arg);
      case 'dispose': {
        const c = constraints.get(m.cid);
        constraints.delete(m.cid);
        try {
          c?.dispose();
        } catch (e) {
          noteFailure(e);
        }
        return;
      }
      default:
        jobs = jobs.then(() => runJob(m).then((reply) => port.post(reply)));
    }
  });
  port.post({ kind: 'ready' });
}

function isTrap(e: unknown): boolean {
  if (e instanceof WebAssembly.RuntimeError) return true;
  const text = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
  return /Aborted\(|RuntimeError|memory access out of bounds|unreachable|index out of bounds|budget .* exhausted/i.test(text);
}
