/** Where downloaded models are kept: one file per URL in a cache folder. */
import { createHash } from 'node:crypto';
import { homedir } from 'node:os';
import { join } from 'node:path';

/** The cache folder: the option, else SVC_CACHE_DIR, else ~/.cache/svc/models. */
export function modelCacheDir(option?: string, env: NodeJS.ProcessEnv = process.env): string {
  return option || env.SVC_CACHE_DIR || join(homedir(), '.cache', 'svc', 'models');
}

/**
 * A readable, collision-free file name for a URL: the last path segment (sanitized) plus a short hash of the
 * whole URL, so `.../main/model.gguf` from two repositories never share a file.
 */
export function cacheFileName(url: string): string {
  const u = new URL(url);
  u.hash = '';
  const hash = createHash('sha256').update(u.href).digest('hex').slice(0, 12);
  let last = '';
  try {
    last = decodeURIComponent(u.pathname.split('/').filter(Boolean).pop() ?? '');
  } catch {
    last = u.pathname.split('/').filter(Boolean).pop() ?? '';
  }
  const safe = last.replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(-96);
  if (!safe) return `${u.hostname.replace(/[^A-Za-z0-9.-]+/g, '_')}-${hash}`;
  const dot = safe.lastIndexOf('.');
  return dot > 0 ? `${safe.slice(0, dot)}-${hash}${safe.slice(dot)}` : `${safe}-${hash}`;
}
