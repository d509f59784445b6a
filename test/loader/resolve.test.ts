import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { cacheFileName, modelCacheDir } from '../../engine/loader/cache-path-node.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { resolveModel } from '../../engine/loader/resolve-node.ts';
import { sharedModel } from '../helpers/models.ts';
import { startModelServer } from './model-server.ts';

const root = await mkdtemp(join(tmpdir(), 'svc-resolve-'));
const savedCacheEnv = process.env.SVC_CACHE_DIR;
afterAll(() => rm(root, { recursive: true, force: true }));
afterEach(() => {
  if (savedCacheEnv === undefined) delete process.env.SVC_CACHE_DIR;
  else process.env.SVC_CACHE_DIR = savedCacheEnv;
});

describe('resolveModel', () => {
  it('opens a local path as a FileSource', async () => {
    const path = sharedModel('stories260K.gguf');
    const src = await resolveModel(path);
    try {
      expect(src).toBeInstanceOf(FileSource);
      expect(src.name).toBe(path);
      expect(await src.size()).toBe(1_185_376);
    } finally {
      await src.close?.();
    }
  });

  it('opens a file: URL', async () => {
    const path = sharedModel('stories260K.gguf');
    const src = await resolveModel(pathToFileURL(path).href);
    expect(src.name).toBe(path);
    await src.close?.();
  });

  it('says which file is missing, with the absolute path', async () => {
    await expect(resolveModel('no/such/model.gguf')).rejects.toThrow(`model file not found: ${join(process.cwd(), 'no/such/model.gguf')} (from "no/such/model.gguf")`);
    await expect(resolveModel('/nope/model.gguf')).rejects.toThrow('model file not found: /nope/model.gguf');
    await expect(resolveModel('~/surely-not-here.gguf')).rejects.toThrow(`model file not found: ${join(homedir(), 'surely-not-here.gguf')}`);
  });

  it('refuses a directory, an empty name, an unknown scheme and plain http to another host', async () => {
    await expect(resolveModel(root)).rejects.toThrow(`model path is a directory, not a GGUF file: ${root}`);
    await expect(resolveModel('  ')).rejects.toThrow('no model given');
    await expect(resolveModel('hf://org/repo/model.gguf')).rejects.toThrow('URL scheme "hf:" is not supported');
    await expect(resolveModel('http://example.com/model.gguf')).rejects.toThrow('uses plain http; only https:// is allowed except for localhost');
  });

  it('downloads a URL into the cache folder given as an option, then reads it from there', async () => {
    const bytes = await readFile(sharedModel('stories260K.gguf'));
    const server = await startModelServer({ bytes });
    try {
      const cacheDir = join(root, 'opt-cache');
      const url = server.url('/model.gguf');
      const src = await resolveModel(url, { cacheDir });
      expect(src).toBeInstanceOf(FileSource);
      expect(src.name).toBe(join(cacheDir, cacheFileName(url)));
      expect((await parseGguf(src)).tensors).toHaveLength(48);
      await src.close?.();
      const again = await resolveModel(url, { cacheDir });
      expect(again.name).toBe(src.name);
      await again.close?.();
      expect(server.requests).toHaveLength(1);
    } finally {
      await server.close();
    }
  });

  it('uses SVC_CACHE_DIR when no cache folder is given', async () => {
    const bytes = await readFile(sharedModel('stories260K.gguf'));
    const server = await startModelServer({ bytes });
    try {
      process.env.SVC_CACHE_DIR = join(root, 'env-cache');
      const url = server.url('/model.gguf');
      const src = await resolveModel(url);
      expect(src.name).toBe(join(root, 'env-cache', cacheFileName(url)));
      await src.close?.();
    } finally {
      await server.close();
    }
  });
});

describe('cache folder and file names', () => {
  it('prefers the option, then SVC_CACHE_DIR, then ~/.cache/svc/models', () => {
    expect(modelCacheDir('/opt/x', { SVC_CACHE_DIR: '/env/y' })).toBe('/opt/x');
    expect(modelCacheDir(undefined, { SVC_CACHE_DIR: '/env/y' })).toBe('/env/y');
    expect(modelCacheDir(undefined, {})).toBe(join(homedir(), '.cache', 'svc', 'models'));
  });

  it('keeps the URL file name readable and tells different URLs apart', () => {
    const a = cacheFileName('https://huggingface.co/org-a/repo/resolve/main/model-Q8_0.gguf');
    const b = cacheFileName('https://huggingface.co/org-b/repo/resolve/main/model-Q8_0.gguf');
    expect(a).toMatch(/^model-Q8_0-[0-9a-f]{12}\.gguf$/);
    expect(b).toMatch(/^model-Q8_0-[0-9a-f]{12}\.gguf$/);
    expect(a).not.toBe(b);
    expect(cacheFileName('https://x.org/m.gguf?download=true')).not.toBe(cacheFileName('https://x.org/m.gguf'));
    expect(cacheFileName('https://x.org/m.gguf#frag')).toBe(cacheFileName('https://x.org/m.gguf'));
    expect(cacheFileName('https://x.org/a%20b/%2E%2E%2Fevil name.gguf')).toMatch(/^evil_name-[0-9a-f]{12}\.gguf$/);
    expect(cacheFileName('https://x.org/')).toMatch(/^x\.org-[0-9a-f]{12}$/);
  });
});
