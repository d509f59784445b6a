/**
 * Model downloads into the cache: once per URL, into `<name>.part`, renamed only when the size checks out.
 * Resumable with HTTP Range (If-Range guards against the file changing between attempts), retried after
 * dropped or stalled connections, shared between concurrent callers in this process, and locked against
 * other processes downloading the same URL into the same cache.
 */
import { mkdir, open, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { cacheFileName, modelCacheDir } from './cache-path-node.ts';
import { parseContentRange } from './content-range.ts';
import { FileSink } from './file-sink-node.ts';

export type ProgressCallback = (receivedBytes: number, totalBytes: number | undefined) => void;

export interface DownloadOptions {
  /** Cache folder; SVC_CACHE_DIR or ~/.cache/svc/models unless told. */
  cacheDir?: string;
  onProgress?: ProgressCallback;
  /** Stops this caller's wait; the transfer itself stops once no caller is waiting. The `.part` is kept. */
  signal?: AbortSignal;
  /** Extra request headers (e.g. Authorization for gated models). */
  headers?: Record<string, string>;
  /** Automatic resumes after a dropped or stalled connection or a 5xx answer (default 5). */
  retries?: number;
  /** A connection that delivers nothing for this long counts as dropped (default 60 s). */
  stallTimeoutMs?: number;
}

/** A failed download; `retryable` when resuming may succeed (network trouble, 5xx), not for 404 or a size lie. */
export class DownloadError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'DownloadError';
  }
}

/** What the first response said about the file, kept beside the `.part` so a resume can tell if it changed. */
interface PartInfo {
  url: string;
  totalBytes?: number;
  validator?: string;
}

const LOCK_POLL_MS = 250;
/** A lock file with no pid yet is another process between creating and writing it; older than this, it is debris. */
const EMPTY_LOCK_GRACE_MS = 5000;

/** Downloads `url` into the cache (or finds it there) and returns the cached file's path. */
export async function downloadModel(url: string, options: DownloadOptions = {}): Promise<string> {
  const dest = join(modelCacheDir(options.cacheDir), cacheFileName(url));
  for (;;) {
    if (await isFile(dest)) return dest;
    const current = inflight.get(dest);
    if (!current) break;
    if (!current.abandoned) return current.join(options);
    // Its last caller gave up; let it release the .part before starting over.
    await current.done.catch(() => {});
  }
  const shared = new SharedDownload(url, dest, options);
  inflight.set(dest, shared);
  void shared.done.catch(() => {}).finally(() => inflight.delete(dest));
  return shared.join(options);
}

const inflight = new Map<string, SharedDownload>();

/** One transfer that several callers wait on, each with its own progress callback and abort signal. */
class SharedDownload {
  readonly done: Promise<string>;
  abandoned = false;
  private readonly controller = new AbortController();
  private readonly listeners = new Set<ProgressCallback>();
  private waiters = 0;
  private last: [number, number | undefined] | undefined;

  constructor(
    private readonly url: string,
    dest: string,
    options: DownloadOptions,
  ) {
    this.done = transfer(url, dest, {
      headers: options.headers ?? {},
      retries: options.retries ?? 5,
      stallTimeoutMs: options.stallTimeoutMs ?? 60_000,
      signal: this.controller.signal,
      report: (received, total) => {
        this.last = [received, total];
        for (const l of this.listeners) l(received, total);
      },
    });
  }

  async join({ onProgress, signal }: DownloadOptions): Promise<string> {
    this.waiters++;
    if (onProgress) {
      this.listeners.add(onProgress);
      if (this.last) onProgress(...this.last);
    }
    try {
      if (!signal) return await this.done;
      return await new Promise<string>((resolve, reject) => {
        const onAbort = () => reject(abortError(this.url, this.last, signal.reason));
        if (signal.aborted) return onAbort();
        signal.addEventListener('abort', onAbort, { once: true });
        this.done.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
      });
    } finally {
      this.waiters--;
      if (onProgress) this.listeners.delete(onProgress);
      if (this.waiters === 0) {
        this.abandoned = true;
        this.controller.abort(new Error('every caller stopped waiting'));
      }
    }
  }
}

function abortError(url: string, last: [number, number | undefined] | undefined, reason: unknown): Error {
  const at = last ? ` at ${last[0]}${last[1] === undefined ? '' : ` of ${last[1]}`} bytes` : '';
  const e = new DOMException(`download of ${url} was aborted${at}; what arrived is kept for resume`, 'AbortError');
  (e as { cause?: unknown }).cause = reason;
  return e;
}

interface TransferOptions {
  headers: Record<string, string>;
  retries: number;
  stallTimeoutMs: number;
  signal: AbortSignal;
  report: ProgressCallback;
}

async function transfer(url: string, dest: string, o: TransferOptions): Promise<string> {
  const dir = dirname(dest);
  await mkdir(dir, { recursive: true }).catch((e: Error) => {
    throw new DownloadError(`cannot create the model cache folder ${dir}: ${e.message}`, false);
  });
  const release = await acquireLock(`${dest}.lock`, o.signal, url);
  try {
    // Another process may have finished it while we waited for the lock.
    if (await isFile(dest)) return dest;
    const part = `${dest}.part`;
    for (let failures = 0; ; ) {
      const before = (await fileSize(part)) ?? 0;
      try {
        await attempt(url, part, o);
        break;
      } catch (e) {
        if (o.signal.aborted) throw e;
        if (!(e instanceof DownloadError && e.retryable) || failures >= o.retries) throw e;
        failures++;
        // A connection that dropped after delivering data is worth retrying at once; a dead one is not.
        if (((await fileSize(part)) ?? 0) <= before) await sleep(Math.min(250 * 2 ** failures, 10_000), o.signal);
      }
    }
    await rename(part, dest);
    await rm(`${part}.json`, { force: true });
    return dest;
  } finally {
    await release();
  }
}

/** One request: continues the `.part` from its size when the server allows, else starts it over. */
async function attempt(url: string, part: string, o: TransferOptions): Promise<void> {
  const have = (await fileSize(part)) ?? 0;
  const info = have > 0 ? await readInfo(part) : undefined;
  const headers: Record<string, string> = { ...o.headers, 'accept-encoding': 'identity' };
  if (have > 0) {
    headers.range = `bytes=${have}-`;
    if (info?.validator) headers['if-range'] = info.validator;
  }
  const watchdog = new Watchdog(o.stallTimeoutMs);
  const signal = AbortSignal.any([o.signal, watchdog.signal]);
  let received = have;
  const failed = (what: string, e: unknown, total?: number): Error => {
    if (o.signal.aborted) return e as Error;
    const at = `at ${received}${total === undefined ? '' : ` of ${total}`} bytes`;
    const why = watchdog.signal.aborted ? `no data for ${o.stallTimeoutMs / 1000} s` : (e as Error).message;
    return new DownloadError(`download of ${url} failed ${what} ${at}: ${why}; what arrived is kept in ${part} for resume`, true, { cause: e });
  };
  try {
    const res = await fetch(url, { headers, signal, redirect: 'follow' }).catch((e: Error) => {
      throw failed('to connect', causeOf(e));
    });
    const restart = async (why: string): Promise<void> => {
      watchdog.stop();
      await res.body?.cancel().catch(() => {});
      await rm(part, { force: true });
      await rm(`${part}.json`, { force: true });
      if (have === 0) throw new DownloadError(`download of ${url} failed: ${why}`, false);
      return attempt(url, part, o);
    };
    if (res.status === 416 && have > 0) {
      // Nothing left to send: either the .part is already whole (we stopped before renaming) or the file shrank.
      const total = parseContentRange(res.headers.get('content-range'))?.total;
      if (total === have && (info?.totalBytes === undefined || info.totalBytes === have)) {
        await res.body?.cancel().catch(() => {});
        o.report(have, have);
        return;
      }
      return restart(`the server refused range ${have}- (HTTP 416)`);
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      const where = res.redirected ? ` (redirected to ${res.url})` : '';
      const retryable = res.status >= 500 || res.status === 429 || res.status === 408;
      throw new DownloadError(`download of ${url} failed: HTTP ${res.status} ${res.statusText}${where}`, retryable);
    }
    if (!res.body) throw new DownloadError(`download of ${url} failed: HTTP ${res.status} with no body`, false);

    let start = 0;
    let total: number | undefined;
    if (res.status === 206) {
      const range = parseContentRange(res.headers.get('content-range'));
      if (!range || range.start !== have) return restart(`asked for bytes ${have}- but the server sent "${res.headers.get('content-range')}"`);
      if (info?.totalBytes !== undefined && range.total !== undefined && range.total !== info.totalBytes) {
        return restart(`the file changed size on the server (${info.totalBytes} → ${range.total} bytes)`);
      }
      start = have;
      total = range.total ?? info?.totalBytes;
    } else {
      // 200: the whole file, because we asked from 0, the server ignores Range, or If-Range saw a changed file.
      total = contentLength(res.headers);
    }
    if (start === 0 || !info) await writeInfo(part, { url, totalBytes: total, validator: validatorOf(res.headers) });

    received = start;
    const sink = await FileSink.open(part, { append: start > 0 });
    try {
      if (sink.position !== start) throw new DownloadError(`${part} holds ${sink.position} bytes, expected ${start} (changed by someone else?)`, true);
      o.report(received, total);
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          watchdog.kick();
          if (total !== undefined && received + chunk.byteLength > total) {
            throw new DownloadError(`download of ${url} failed: the server sent more than the ${total} bytes it announced`, false);
          }
          await sink.write(chunk);
          received += chunk.byteLength;
          o.report(received, total);
        }
      } catch (e) {
        if (e instanceof DownloadError) throw e;
        throw failed('while receiving', causeOf(e), total);
      }
    } finally {
      await sink.close();
    }
    if (total !== undefined && received !== total) {
      throw new DownloadError(
        `download of ${url} is incomplete: the server announced ${total} bytes but the response ended at ${received}; ` +
          `what arrived is kept in ${part}, run again to resume`,
        false,
      );
    }
  } finally {
    watchdog.stop();
  }
}

/** undici hides the socket's own error ("other side closed", "connect ECONNREFUSED ...") behind "terminated" or "fetch failed". */
function causeOf(e: unknown): Error {
  const err = e as Error & { cause?: Error };
  return err?.cause instanceof Error ? new Error(`${err.message === 'terminated' ? 'connection lost' : err.message} (${err.cause.message})`) : err;
}

/** Aborts when `kick` is not called for `ms`: a silent connection would otherwise hang the download forever. */
class Watchdog {
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  readonly signal = this.controller.signal;
  constructor(private readonly ms: number) {
    this.kick();
  }
  kick(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.controller.abort(new Error('stalled')), this.ms);
    this.timer.unref?.();
  }
  stop(): void {
    clearTimeout(this.timer);
  }
}

function contentLength(h: Headers): number | undefined {
  const v = h.get('content-length');
  return v !== null && /^\d+$/.test(v) ? Number(v) : undefined;
}

/** If-Range needs a strong ETag or a Last-Modified date. */
function validatorOf(h: Headers): string | undefined {
  const etag = h.get('etag');
  if (etag && !etag.startsWith('W/')) return etag;
  return h.get('last-modified') ?? undefined;
}

async function readInfo(part: string): Promise<PartInfo | undefined> {
  try {
    return JSON.parse(await readFile(`${part}.json`, 'utf8')) as PartInfo;
  } catch {
    return undefined;
  }
}

async function writeInfo(part: string, info: PartInfo): Promise<void> {
  await writeFile(`${part}.json`, JSON.stringify(info));
}

async function fileSize(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch {
    return undefined;
  }
}

async function isFile(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isFile();
  } catch {
    return false;
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Waits while another live process holds the lock for this file; takes over locks left by dead ones. */
async function acquireLock(lock: string, signal: AbortSignal, url: string): Promise<() => Promise<void>> {
  for (;;) {
    try {
      const fh = await open(lock, 'wx');
      await fh.writeFile(String(process.pid));
      await fh.close();
      return () => rm(lock, { force: true });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw new DownloadError(`cannot create download lock ${lock} for ${url}: ${(e as Error).message}`, false);
    }
    const text = await readFile(lock, 'utf8').catch(() => undefined);
    if (text === undefined) continue;
    const pid = Number(text.trim());
    const age = Date.now() - ((await stat(lock).catch(() => undefined))?.mtimeMs ?? 0);
    const held = text.trim() === '' ? age < EMPTY_LOCK_GRACE_MS : pid !== process.pid && isAlive(pid);
    if (!held) {
      await rm(lock, { force: true });
      continue;
    }
    await sleep(LOCK_POLL_MS, signal);
  }
}
