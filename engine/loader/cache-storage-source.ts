/**
 * A GGUF downloaded once into the browser's Cache Storage and read from there: fetched in fixed-size
 * ranges (each chunk its own cache entry, so an interrupted download resumes at the first missing chunk
 * and no chunk is ever held twice in memory), verified by size (every chunk's length and the total), with
 * progress in bytes. A later visit finds the manifest and every chunk in the cache and loads with no
 * network. Web APIs only (pages, dedicated and service workers).
 */
import { FetchSource } from './fetch-source.ts';
import type { ModelSource } from './source.ts';

export const MODEL_CACHE_NAME = 'svc-models';
export const DEFAULT_CHUNK_BYTES = 32 * 1024 * 1024;

export interface ModelDownloadProgress {
  loaded: number;
  total: number;
  /** Bytes found already in the cache (a resumed or repeated download). */
  fromCache: number;
}

export interface CachedModelOptions {
  chunkBytes?: number;
  cacheName?: string;
  onProgress?: (p: ModelDownloadProgress) => void;
  signal?: AbortSignal;
}

interface Manifest {
  url: string;
  size: number;
  chunkBytes: number;
  complete: boolean;
}

/** Downloads what the cache lacks of `url`, then returns a source that reads only from the cache. */
export async function cachedModel(url: string, opts: CachedModelOptions = {}): Promise<CacheStorageSource> {
  const cache = await caches.open(opts.cacheName ?? MODEL_CACHE_NAME);
  const manifestKey = entryUrl(url, 'manifest');
  let manifest = (await (await cache.match(manifestKey))?.json()) as Manifest | undefined;
  const remote = new FetchSource(url, { signal: opts.signal });
  if (!manifest || manifest.url !== url) {
    const size = await remote.size();
    manifest = { url, size, chunkBytes: opts.chunkBytes ?? DEFAULT_CHUNK_BYTES, complete: false };
    await cache.put(manifestKey, jsonResponse(manifest));
  }
  const { size, chunkBytes } = manifest;
  const chunks = Math.ceil(size / chunkBytes);
  let loaded = 0;
  let fromCache = 0;
  for (let i = 0; i < chunks; i++) {
    opts.signal?.throwIfAborted();
    const length = Math.min(chunkBytes, size - i * chunkBytes);
    const have = await cache.match(entryUrl(url, `chunk/${i}`));
    if (have && Number(have.headers.get('content-length')) === length) {
      loaded += length;
      fromCache += length;
    } else {
      const bytes = await remote.read(i * chunkBytes, length);
      await cache.put(entryUrl(url, `chunk/${i}`), new Response(bytes as BufferSource, { headers: { 'content-type': 'application/octet-stream', 'content-length': String(length) } }));
      loaded += length;
    }
    opts.onProgress?.({ loaded, total: size, fromCache });
  }
  if (!manifest.complete) await cache.put(manifestKey, jsonResponse({ ...manifest, complete: true }));
  if (chunks === 0) opts.onProgress?.({ loaded: 0, total: 0, fromCache: 0 });
  return new CacheStorageSource(cache, manifest);
}

/** Whether `url` is wholly in the cache (a load would need no network). */
export async function isModelCached(url: string, cacheName = MODEL_CACHE_NAME): Promise<boolean> {
  const cache = await caches.open(cacheName);
  const manifest = (await (await cache.match(entryUrl(url, 'manifest')))?.json()) as Manifest | undefined;
  return manifest?.complete === true && manifest.url === url;
}

/** Deletes the cached copy of `url` (every chunk and the manifest). */
export async function evictModel(url: string, cacheName = MODEL_CACHE_NAME): Promise<void> {
  const cache = await caches.open(cacheName);
  const prefix = entryUrl(url, '');
  for (const req of await cache.keys()) if (req.url.startsWith(prefix)) await cache.delete(req);
}

export class CacheStorageSource implements ModelSource {
  readonly name: string;
  /** The chunk read last: weights are read in order, so most reads fall in it. */
  private held: { index: number; bytes: Uint8Array } | undefined;

  constructor(
    private readonly cache: Cache,
    private readonly manifest: Manifest,
  ) {
    this.name = manifest.url;
  }

  async size(): Promise<number> {
    return this.manifest.size;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const { size, chunkBytes } = this.manifest;
    if (offset < 0 || length < 0 || offset + length > size) throw new Error(`${this.name}: read of ${length} bytes at ${offset} runs past the end (${size} bytes)`);
    const first = Math.floor(offset / chunkBytes);
    const last = Math.floor((offset + Math.max(length, 1) - 1) / chunkBytes);
    if (first === last) {
      const c = await this.chunk(first);
      return c.subarray(offset - first * chunkBytes, offset - first * chunkBytes + length);
    }
    const out = new Uint8Array(length);
    for (let i = first; i <= last; i++) {
      const c = await this.chunk(i);
      const start = Math.max(offset, i * chunkBytes);
      const end = Math.min(offset + length, i * chunkBytes + c.byteLength);
      out.set(c.subarray(start - i * chunkBytes, end - i * chunkBytes), start - offset);
    }
    return out;
  }

  async close(): Promise<void> {
    this.held = undefined;
  }

  private async chunk(index: number): Promise<Uint8Array> {
    if (this.held?.index === index) return this.held.bytes;
    const { size, chunkBytes, url } = this.manifest;
    const res = await this.cache.match(entryUrl(url, `chunk/${index}`));
    const expected = Math.min(chunkBytes, size - index * chunkBytes);
    const bytes = res ? new Uint8Array(await res.arrayBuffer()) : undefined;
    if (!bytes || bytes.byteLength !== expected) {
      throw new Error(`${url}: chunk ${index} of the cached model is ${bytes ? `${bytes.byteLength} bytes, not ${expected}` : 'missing'} (the browser evicted it?); load the model again to download it`);
    }
    this.held = { index, bytes };
    return bytes;
  }
}

/** Cache keys are synthetic URLs (the Cache API takes only http(s) requests); they are never fetched. */
function entryUrl(modelUrl: string, part: string): string {
  return `https://svc-model-cache.invalid/${encodeURIComponent(modelUrl)}/${part}`;
}

function jsonResponse(value: unknown): Response {
  return new Response(JSON.stringify(value), { headers: { 'content-type': 'application/json' } });
}
