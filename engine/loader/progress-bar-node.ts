/**
 * Progress display for long transfers on stderr: a redrawn bar on a terminal, and on anything else
 * (logs, CI) a plain line every 10% (or every 30 s when the total is unknown), so logs stay short.
 */
export interface ProgressBar {
  update(done: number, total: number | undefined): void;
  /** Ends the display (a final line); call once. */
  finish(): void;
}

export interface ProgressBarOptions {
  stream?: NodeJS.WritableStream & { isTTY?: boolean; columns?: number };
  /** Clock in ms; tests pass their own. */
  now?: () => number;
}

const REDRAW_MS = 100;
const PLAIN_EVERY_MS = 30_000;

export function createProgressBar(label: string, { stream = process.stderr, now = Date.now }: ProgressBarOptions = {}): ProgressBar {
  const started = now();
  let last = { done: 0, total: undefined as number | undefined };
  let lastDraw = -Infinity;
  let lastDecile = -1;
  let finished = false;
  const tty = stream.isTTY === true;

  const line = (): string => {
    const { done, total } = last;
    const secs = Math.max((now() - started) / 1000, 1e-3);
    const rate = done / secs;
    const speed = `${formatBytes(rate)}/s`;
    if (total === undefined || total <= 0) return `${label}  ${formatBytes(done)}  ${speed}`;
    const frac = Math.min(done / total, 1);
    const eta = rate > 0 ? formatDuration((total - done) / rate) : '?';
    const text = `${(frac * 100).toFixed(1).padStart(5)}%  ${formatBytes(done)} / ${formatBytes(total)}  ${speed}  ETA ${eta}`;
    if (!tty) return `${label}: ${text}`;
    // Sized from the label only, so the bar does not jump as the numbers change width.
    const width = Math.max(10, Math.min(40, (stream.columns ?? 80) - label.length - 64));
    const filled = Math.round(frac * width);
    return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${text}`;
  };

  return {
    update(done, total) {
      if (finished) return;
      last = { done, total };
      const t = now();
      if (tty) {
        if (t - lastDraw < REDRAW_MS && done !== total) return;
        lastDraw = t;
        stream.write(`\r${line()}\x1b[K`);
        return;
      }
      const decile = total ? Math.floor((done / total) * 10) : -1;
      if (total ? decile > lastDecile : t - lastDraw >= PLAIN_EVERY_MS) {
        lastDecile = decile;
        lastDraw = t;
        stream.write(`${line()}\n`);
      }
    },
    finish() {
      if (finished) return;
      finished = true;
      const took = formatDuration((now() - started) / 1000);
      stream.write(tty ? `\r${line()}  done in ${took}\x1b[K\n` : `${label}: done, ${formatBytes(last.done)} in ${took}\n`);
    },
  };
}

export function formatBytes(n: number): string {
  if (n < 1024) return `${Math.round(n)} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${v.toFixed(v < 10 ? 2 : 1)} ${units[i]}`;
}

export function formatDuration(secs: number): string {
  if (!Number.isFinite(secs)) return '?';
  const s = Math.round(secs);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = String(s % 60).padStart(2, '0');
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${r}` : `${m}:${r}`;
}
