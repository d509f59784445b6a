/**
 * Our model-load progress (adapters/service-worker/progress.ts: download, upload to the GPU, compile,
 * ready) as WebLLM's InitProgressReports: `progress` from 0 to 1 (exactly 1 once, when the model is
 * ready, with WebLLM's own closing text "Finish loading on WebGPU - <adapter>"), `timeElapsed` in
 * seconds since reload() began, and a line of text. Platform-free.
 */
import type { InitProgressReport } from '@mlc-ai/web-llm';
import type { LoadProgress } from '../service-worker/progress.ts';

/** Shares of the bar: the download is most of a first load; a cached model passes through it at once. */
const DOWNLOAD_SHARE = 0.7;
const UPLOAD_SHARE = 0.25;
/** At most this often within a phase (an upload reports every tensor); phase changes always pass. */
const MIN_INTERVAL_MS = 100;

const mb = (bytes: number) => (bytes / (1 << 20)).toFixed(1);

export function initProgressReport(p: LoadProgress, startedAt: number, now: number, modelId: string): InitProgressReport | undefined {
  const timeElapsed = Math.max(0, (now - startedAt) / 1000);
  const secs = Math.round(timeElapsed);
  const frac = p.total > 0 ? Math.min(1, p.loaded / p.total) : 0;
  switch (p.phase) {
    case 'download': {
      const progress = DOWNLOAD_SHARE * frac;
      const cached = p.fromCache && p.fromCache >= p.total && p.total > 0;
      const text =
        p.total === 0
          ? `Fetching ${modelId}: starting, ${secs} secs elapsed.`
          : cached
            ? `Loading ${modelId} from cache: ${mb(p.total)}MB, ${secs} secs elapsed.`
            : `Fetching ${modelId}: ${mb(p.loaded)}MB of ${mb(p.total)}MB fetched${p.fromCache ? ` (${mb(p.fromCache)}MB from cache)` : ''}. ${Math.floor(frac * 100)}% completed, ${secs} secs elapsed. It can take a while when we first visit this page to populate the cache. Later refreshes will become faster.`;
      return { progress, timeElapsed, text };
    }
    case 'upload':
      return { progress: DOWNLOAD_SHARE + UPLOAD_SHARE * frac, timeElapsed, text: `Loading ${modelId} onto the GPU: ${mb(p.loaded)}MB of ${mb(p.total)}MB, ${secs} secs elapsed.` };
    case 'compile':
      return { progress: DOWNLOAD_SHARE + UPLOAD_SHARE, timeElapsed, text: `Compiling GPU pipelines for ${modelId}, ${secs} secs elapsed.` };
    default:
      // idle: nothing yet; ready: reported by the engine once it knows the adapter; error: reload() rejects.
      return undefined;
  }
}

/** A reporter for one reload(): monotonic progress, throttled within a phase, never 1 before the end. */
export function progressReporter(cb: ((r: InitProgressReport) => void) | undefined, modelId: string, startedAt = performance.now()) {
  let last = 0;
  let lastPhase = '';
  let lastAt = -Infinity;
  return {
    load(p: LoadProgress): void {
      if (!cb) return;
      const now = performance.now();
      const r = initProgressReport(p, startedAt, now, modelId);
      if (!r) return;
      const done = p.total > 0 && p.loaded >= p.total;
      if (p.phase === lastPhase && !done && now - lastAt < MIN_INTERVAL_MS) return;
      lastPhase = p.phase;
      lastAt = now;
      last = Math.max(last, Math.min(r.progress, 0.99));
      cb({ ...r, progress: last });
    },
    ready(gpuLabel: string): void {
      cb?.({ progress: 1, timeElapsed: (performance.now() - startedAt) / 1000, text: `Finish loading on ${gpuLabel}` });
    },
  };
}
