/**
 * A ModelSource over HTTP for pages and workers: reads byte ranges with Range requests, so the GGUF header and
 * each tensor are fetched on demand. A server that ignores Range sends the whole file once; it is kept and served
 * from memory. Web APIs only.
 */
import { parseContentRange } from './content-range.ts';
import type { ModelSource } from './source.ts';

export interface FetchSourceOptions {
  /** Extra request headers (e.g. Authorization). */
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export class FetchSource implements ModelSource {
  readonly name: string;
  private probe: Promise<number> | undefined;
  /** The whole file, once a server has sent it whole instead of a range. */
  private whole: Uint8Array | undefined;

  constructor(
    readonly url: string,
    private readonly options: FetchSourceOptions = {},
  ) {
    this.name = url;
  }

  size(): Promise<number> {
    this.probe ??= this.fetchSize().catch((e) => {
      this.probe = undefined;
      throw e;
    });
    return this.probe;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const size = await this.size();
    if (offset < 0 || length < 0 || offset + length > size) {
      throw new Error(`${this.url}: read of ${length} bytes at ${offset} runs past the end (${size} bytes)`);
    }
    if (this.whole) return this.whole.subarray(offset, offset + length);
    if (length === 0) return new Uint8Array(0);
    const res = await this.get(`bytes=${offset}-${offset + length - 1}`);
    if (res.status === 200) {
      // The server stopped honouring Range: take the whole file this once.
      await this.keepWhole(res);
      return this.whole!.subarray(offset, offset + length);
    }
    const bytes = await this.body(res);
    if (bytes.byteLength !== length) {
      throw new Error(`${this.url}: asked for ${length} bytes at ${offset}, the server sent ${bytes.byteLength}`);
    }
    return bytes;
  }

  /** One small range request tells the size (Content-Range) and whether the server honours Range at all. */
  private async fetchSize(): Promise<number> {
    const res = await this.get('bytes=0-0');
    if (res.status === 206) {
      const total = parseContentRange(res.headers.get('content-range'))?.total;
      await res.body?.cancel();
      if (total !== undefined) return total;
      // Cross-origin servers may hide Content-Range (Access-Control-Expose-Headers); fall back to the whole file.
      const full = await this.get(undefined);
      await this.keepWhole(full);
      return this.whole!.byteLength;
    }
    await this.keepWhole(res);
    return this.whole!.byteLength;
  }

  private async keepWhole(res: Response): Promise<void> {
    const bytes = await this.body(res);
    const announced = res.headers.get('content-length');
    if (announced !== null && res.headers.get('content-encoding') === null && Number(announced) !== bytes.byteLength) {
      throw new Error(`${this.url}: the server announced ${announced} bytes but sent ${bytes.byteLength}`);
    }
    this.whole = bytes;
  }

  private async body(res: Response): Promise<Uint8Array> {
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (e) {
      const cause = (e as { cause?: Error }).cause;
      throw new Error(`${this.url}: the response broke off (${cause?.message ?? (e as Error).message})`, { cause: e });
    }
  }

  private async get(range: string | undefined): Promise<Response> {
    const headers: Record<string, string> = { ...this.options.headers };
    if (range) headers.range = range;
    let res: Response;
    try {
      res = await fetch(this.url, { headers, signal: this.options.signal });
    } catch (e) {
      const cause = (e as { cause?: Error }).cause;
      throw new Error(`${this.url}: request failed: ${(e as Error).message}${cause ? ` (${cause.message})` : ''}`, { cause: e });
    }
    if (res.status !== 200 && res.status !== 206) {
      await res.body?.cancel();
      throw new Error(`${this.url}: HTTP ${res.status} ${res.statusText}${range ? ` for range ${range}` : ''}`);
    }
    return res;
  }
}
