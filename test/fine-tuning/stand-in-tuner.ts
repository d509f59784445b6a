/**
 * STAND-IN TUNER, for the API plumbing only (before the trainer and adapter serving are merged): it
 * walks the same steps, hooks, checkpoints and abort as the real training loop (engine/train/loop.ts)
 * without touching a GPU, so the tests can check jobs, events, cancel and resume deterministically.
 * After the merge, the end-to-end test (api.test.ts, "REAL TRAINER") runs protocol/fine-tuning/engine-tuner.ts.
 */
import type { FineTuneHooks } from '../../engine/train/types.ts';
import type { Tuner, TuneInput, TuneOutput } from '../../protocol/fine-tuning/tuner.ts';

export class StandInTuner implements Tuner {
  /** Adapters loaded now, by id. */
  readonly loaded = new Map<string, { name: string; bytes: Uint8Array }>();
  readonly unloaded: string[] = [];
  /** Each train() call: where it started (0, or the checkpoint's step). */
  readonly runs: { startStep: number; steps: number }[] = [];
  /** What each train() call was given. */
  readonly inputs: TuneInput[] = [];
  busy = false;
  private nextId = 1;

  constructor(
    /** Time each step takes. */
    private readonly stepMs = 0,
  ) {}

  async train(input: TuneInput, hooks: FineTuneHooks): Promise<TuneOutput> {
    this.inputs.push(input);
    const s = input.settings;
    const perEpoch = Math.ceil(input.train.length / s.batchSize);
    const total = s.epochs * perEpoch;
    const tokensPerEpoch = input.train.reduce((n, c) => n + c.messages.filter((m) => m.role === 'assistant').reduce((k, m) => k + m.content.length, 0), 0);
    let step = hooks.checkpoint?.resumeFrom ? decodeStep(hooks.checkpoint.resumeFrom) : 0;
    this.runs.push({ startStep: step, steps: total });
    const losses: number[] = [];
    const stopIfAborted = async () => {
      if (!hooks.signal?.aborted) return;
      await hooks.checkpoint?.save(encodeStep(step), step);
      throw Object.assign(new Error(`aborted after ${step} steps`), { name: 'AbortError' });
    };
    while (step < total) {
      await hooks.beforeStep?.();
      await stopIfAborted();
      if (this.stepMs) await new Promise((r) => setTimeout(r, this.stepMs));
      step++;
      const loss = 2 / step;
      losses.push(loss);
      hooks.onProgress?.({ step, totalSteps: total, epoch: Math.ceil(step / perEpoch), loss, tokensPerSecond: 1000, elapsedMs: step, etaMs: total - step });
      const epochEnd = step % perEpoch === 0;
      if (epochEnd) hooks.onEpoch?.({ epoch: step / perEpoch, trainLoss: loss, validationLoss: input.validation ? loss * 1.1 : null });
      if (hooks.checkpoint && (epochEnd || step % hooks.checkpoint.every === 0)) await hooks.checkpoint.save(encodeStep(step), step);
      await stopIfAborted();
    }
    return { adapter: new TextEncoder().encode(`stand-in adapter, ${total} steps, seed ${s.seed}`), trainedTokens: tokensPerEpoch * s.epochs, steps: total, trainLoss: losses, validationLoss: [] };
  }

  async loadAdapter(adapter: Uint8Array, name: string): Promise<string> {
    const id = `adapter-${this.nextId++}`;
    this.loaded.set(id, { name, bytes: adapter });
    return id;
  }

  async unloadAdapter(id: string): Promise<void> {
    this.loaded.delete(id);
    this.unloaded.push(id);
  }

  inferenceBusy(): boolean {
    return this.busy;
  }
}

function encodeStep(step: number): Uint8Array {
  return new TextEncoder().encode(`step=${step}`);
}

function decodeStep(state: Uint8Array): number {
  return Number(new TextDecoder().decode(state).slice('step='.length));
}
