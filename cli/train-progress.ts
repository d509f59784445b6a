/**
 * Training progress on stderr: on a terminal a redrawn line (step/total, a bar, loss, tokens/s, time left),
 * elsewhere (logs, CI) a plain line every 5% of the steps, so logs stay short. Loss is the mean of the
 * last few steps: one step's loss jumps with its batch.
 */
import { formatDuration } from '../engine/loader/progress-bar-node.ts';
import type { FineTuneProgress } from '../engine/train/types.ts';

export interface TrainingProgress {
  update(p: FineTuneProgress): void;
  /** A line of its own that stays (validation loss after an epoch). */
  note(text: string): void;
  finish(): void;
}

const REDRAW_MS = 100;
const LOSS_WINDOW = 10;

export function createTrainingProgress({ stream = process.stderr as NodeJS.WritableStream & { isTTY?: boolean; columns?: number }, now = Date.now } = {}): TrainingProgress {
  const tty = stream.isTTY === true;
  const recent: number[] = [];
  let last: FineTuneProgress | undefined;
  let lastDraw = -Infinity;
  let lastPlainStep = 0;
  let drawn = false;

  const line = (p: FineTuneProgress): string => {
    const loss = recent.reduce((a, b) => a + b, 0) / recent.length;
    const numbers = `loss ${loss.toFixed(4)}  ${Math.round(p.tokensPerSecond)} tok/s  ${formatDuration(p.etaMs / 1000)} left`;
    const steps = `step ${String(p.step).padStart(String(p.totalSteps).length)}/${p.totalSteps}  epoch ${p.epoch}`;
    if (!tty) return `${steps}  ${numbers}  (${formatDuration(p.elapsedMs / 1000)} elapsed)`;
    const width = Math.max(10, Math.min(30, (stream.columns ?? 80) - steps.length - numbers.length - 6));
    const filled = Math.round((p.step / p.totalSteps) * width);
    return `${steps} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${numbers}`;
  };

  return {
    update(p) {
      last = p;
      recent.push(p.loss);
      if (recent.length > LOSS_WINDOW) recent.shift();
      if (tty) {
        const t = now();
        if (t - lastDraw < REDRAW_MS && p.step !== p.totalSteps) return;
        lastDraw = t;
        stream.write(`\r${line(p)}\x1b[K`);
        drawn = true;
        return;
      }
      const every = Math.max(1, Math.round(p.totalSteps / 20));
      if (p.step - lastPlainStep >= every || p.step === p.totalSteps || lastPlainStep === 0) {
        lastPlainStep = p.step;
        stream.write(`${line(p)}\n`);
      }
    },
    note(text) {
      stream.write(tty && drawn ? `\r${text}\x1b[K\n` : `${text}\n`);
      // The bar comes back on the next step.
      drawn = false;
    },
    finish() {
      if (tty && drawn && last) stream.write(`\r${line(last)}\x1b[K\n`);
      drawn = false;
    },
  };
}
