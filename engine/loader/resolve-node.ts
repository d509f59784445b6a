/** Turns what a user typed (a path, a file: URL or an http(s) URL) into a ModelSource, downloading URLs once into the cache. */
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { downloadModel, type DownloadOptions } from './download-node.ts';
import { FileSource } from './file-source.ts';
import type { ModelSource } from './source.ts';

export type ResolveOptions = DownloadOptions;

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);
const HF_HOSTS = new Set(['huggingface.co', 'hf.co']);

export async function resolveModel(pathOrUrl: string, options: ResolveOptions = {}): Promise<ModelSource> {
  const spec = pathOrUrl.trim();
  if (!spec) throw new Error('no model given: expected a GGUF file path or an https:// URL');
  if (/^https?:\/\//i.test(spec)) return new FileSource(await downloadModel(checkedUrl(spec), withHfToken(spec, options)));
  if (/^file:/i.test(spec)) return localFile(fileURLToPath(spec), spec);
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(spec);
  if (scheme) throw new Error(`model "${spec}": URL scheme "${scheme[1]}:" is not supported (use a file path, file:, or https:// URL)`);
  return localFile(resolve(spec.replace(/^~(?=$|[\\/])/, homedir())), spec);
}

async function localFile(path: string, given: string): Promise<FileSource> {
  const st = await stat(path).catch((e: NodeJS.ErrnoException) => {
    const shown = path === given ? path : `${path} (from "${given}")`;
    if (e.code === 'ENOENT') throw new Error(`model file not found: ${shown}`);
    throw new Error(`cannot read model file ${shown}: ${e.message}`);
  });
  if (st.isDirectory()) throw new Error(`model path is a directory, not a GGUF file: ${path}`);
  if (!st.isFile()) throw new Error(`model path is not a regular file: ${path}`);
  return new FileSource(path);
}

/** Plain http is only for local test servers: a model fetched over the open network must come over TLS. */
function checkedUrl(spec: string): string {
  let u: URL;
  try {
    u = new URL(spec);
  } catch {
    throw new Error(`model URL is not valid: ${spec}`);
  }
  if (u.protocol === 'http:' && !LOOPBACK.has(u.hostname)) {
    throw new Error(`model URL ${spec} uses plain http; only https:// is allowed except for localhost`);
  }
  return u.href;
}

/** Gated Hugging Face models (Llama) need the user's token; HF_TOKEN is the name HF's own tools read. */
function withHfToken(spec: string, options: ResolveOptions): ResolveOptions {
  const token = process.env.HF_TOKEN;
  if (!token || !HF_HOSTS.has(new URL(spec).hostname) || options.headers?.authorization) return options;
  return { ...options, headers: { ...options.headers, authorization: `Bearer ${token}` } };
}
