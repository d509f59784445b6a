/**
 * A few files served from memory beside the API (the playground at `/`): exact paths only, GET and HEAD,
 * with a Content-Security-Policy that allows this origin's scripts and API and nothing inline. The API's
 * own paths (`/v1/…`, `/health`, `/ready`) are never taken by a file.
 */
import type { ServerResponse } from 'node:http';

export interface StaticFile {
  type: string;
  body: string | Uint8Array;
}

const CSP = "default-src 'self'; connect-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; worker-src 'self'; object-src 'none'; base-uri 'self'; frame-ancestors 'none'";

export class StaticAssets {
  private readonly files = new Map<string, StaticFile>();

  /** `files` by name relative to the root; `index.html` is also served at `/`. */
  constructor(files: Record<string, StaticFile>) {
    for (const [name, f] of Object.entries(files)) {
      if (name.startsWith('v1/') || name === 'health' || name === 'ready') throw new Error(`a static file may not take the API path /${name}`);
      this.files.set(`/${name}`, f);
    }
    const index = this.files.get('/index.html');
    if (index) this.files.set('/', index);
  }

  /** Answers the request if it names one of the files (true), or leaves it to the API (false). */
  serve(method: string | undefined, path: string, res: ServerResponse): boolean {
    if (method !== 'GET' && method !== 'HEAD') return false;
    const f = this.files.get(path);
    if (!f) return false;
    res.writeHead(200, {
      'content-type': f.type,
      'content-length': typeof f.body === 'string' ? Buffer.byteLength(f.body) : f.body.byteLength,
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
      'cache-control': 'no-cache',
    });
    res.end(method === 'HEAD' ? undefined : f.body);
    return true;
  }
}
