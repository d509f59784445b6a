import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { cacheFileName } from '../../engine/loader/cache-path-node.ts';
import { DownloadError, downloadModel } from '../../engine/loader/download-node.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { sharedModel } from '../helpers/models.ts';
import { startModelServer, type ModelServer } from './model-server.ts';

const MODEL = new Uint8Array(await readFile(sharedModel('stories260K.gguf')));
const OTHER = new Uint8Array(await readFile(sharedModel('TinyStories-656K-Q8_0.gguf')));
const root = await mkdtemp(join(tmpdir(), 'svc-dl-'));
afterAll(() => rm(root, { recursive: true, force: true }));

let server: ModelServer;
let cacheDir: string;
let n = 0;
beforeEach(async () => {
  server = await startModelServer({ bytes: MODEL });
  cacheDir = join(root, `cache-${n++}`);
});
afterEach(() => server.close());

const modelUrl = () => server.url('/model.gguf');
const cachedPath = () => join(cacheDir, cacheFileName(modelUrl()));
const partPath = () => `${cachedPath()}.part`;
const modelRequests = () => server.requests.filter((r) => r.path === '/model.gguf');

async function expectIdentical(path: string, want = MODEL) {
  expect(Buffer.compare(await readFile(path), want)).toBe(0);
}

describe('downloadModel', () => {
  it('downloads once into the cache, names the file after the URL, and reuses it', async () => {
    const progress: [number, number | undefined][] = [];
    const path = await downloadModel(modelUrl(), { cacheDir, onProgress: (r, t) => progress.push([r, t]) });
    expect(path).toBe(cachedPath());
    expect(path).toMatch(/[/\\]model-[0-9a-f]{12}\.gguf$/);
    await expectIdentical(path);
    expect(await readdir(cacheDir)).toEqual([cacheFileName(modelUrl())]);
    // Progress: from 0, never backwards, ends at the full size with the total known throughout.
    expect(progress[0]).toEqual([0, MODEL.length]);
    expect(progress.at(-1)).toEqual([MODEL.length, MODEL.length]);
    expect(progress.every(([r], i) => i === 0 || r >= progress[i - 1][0])).toBe(true);

    const again = await downloadModel(modelUrl(), { cacheDir });
    expect(again).toBe(path);
    expect(modelRequests()).toHaveLength(1);
  });

  it('resumes after the connection drops halfway, asking only for the rest (Range)', async () => {
    const half = Math.floor(MODEL.length / 2);
    server.state.dropAfter = half;
    const first = await downloadModel(modelUrl(), { cacheDir, retries: 0 }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(DownloadError);
    const m = new RegExp(`failed while receiving at (\\d+) of ${MODEL.length} bytes: connection lost .*kept in .*\\.part for resume`).exec((first as Error).message);
    expect(m, (first as Error).message).not.toBeNull();
    // What the client got before the cut: at most what the server sent, and what the .part holds.
    const got = Number(m![1]);
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThanOrEqual(half);
    expect((await stat(partPath())).size).toBe(got);
    await expect(stat(cachedPath())).rejects.toThrow(/ENOENT/);

    const path = await downloadModel(modelUrl(), { cacheDir });
    await expectIdentical(path);
    const [, second] = modelRequests();
    expect(second).toMatchObject({ range: `bytes=${got}-`, ifRange: '"v1"', status: 206 });
    expect(await readdir(cacheDir)).toEqual([cacheFileName(modelUrl())]);
  });

  it('resumes by itself within one call when retries are allowed', async () => {
    server.state.dropAfter = 300_000;
    const path = await downloadModel(modelUrl(), { cacheDir });
    await expectIdentical(path);
    const [first, second] = modelRequests();
    expect(modelRequests()).toHaveLength(2);
    expect(first).toMatchObject({ range: undefined, status: 200 });
    expect(second.status).toBe(206);
    expect(Number(/^bytes=(\d+)-$/.exec(second.range ?? '')?.[1])).toBeLessThanOrEqual(300_000);
  });

  it('restarts from zero when the server ignores Range, and still ends byte-identical', async () => {
    server.state.range = false;
    server.state.dropAfter = 400_000;
    await expect(downloadModel(modelUrl(), { cacheDir, retries: 0 })).rejects.toThrow(/at \d+ of 1185376 bytes/);
    const kept = (await stat(partPath())).size;
    const path = await downloadModel(modelUrl(), { cacheDir });
    await expectIdentical(path);
    expect(modelRequests()[1]).toMatchObject({ range: `bytes=${kept}-`, status: 200 });
  });

  it('starts over when the file changed on the server between attempts (If-Range)', async () => {
    server.state.dropAfter = 200_000;
    await expect(downloadModel(modelUrl(), { cacheDir, retries: 0 })).rejects.toThrow(DownloadError);
    server.state.bytes = OTHER;
    server.state.etag = '"v2"';
    const kept = (await stat(partPath())).size;
    const path = await downloadModel(modelUrl(), { cacheDir });
    await expectIdentical(path, OTHER);
    expect(modelRequests()[1]).toMatchObject({ range: `bytes=${kept}-`, ifRange: '"v1"', status: 200 });
  });

  it('finishes a .part that is already whole (stopped before the rename) without downloading it again', async () => {
    await mkdir(cacheDir, { recursive: true });
    await writeFile(partPath(), MODEL);
    const path = await downloadModel(modelUrl(), { cacheDir });
    await expectIdentical(path);
    expect(modelRequests()).toEqual([expect.objectContaining({ range: `bytes=${MODEL.length}-`, status: 416 })]);
  });

  it('follows redirects, naming the cache file after the URL asked for', async () => {
    const url = server.url('/redirect/model.gguf');
    const path = await downloadModel(url, { cacheDir });
    expect(path).toBe(join(cacheDir, cacheFileName(url)));
    await expectIdentical(path);
    expect(server.requests.map((r) => [r.path, r.status])).toEqual([
      ['/redirect/model.gguf', 302],
      ['/model.gguf', 200],
    ]);
  });

  it('reports a 404 with the URL and leaves nothing in the cache', async () => {
    const url = server.url('/missing.gguf');
    const e = await downloadModel(url, { cacheDir }).catch((err: unknown) => err);
    expect(e).toBeInstanceOf(DownloadError);
    expect((e as Error).message).toBe(`download of ${url} failed: HTTP 404 Not Found`);
    expect(server.requests).toHaveLength(1);
    expect(await readdir(cacheDir)).toEqual([]);
  });

  it('refuses a server that lies about the size: an error, no cached model, the partial kept', async () => {
    const claimed = MODEL.length + 1000;
    server.state.claimLength = claimed;
    await expect(downloadModel(modelUrl(), { cacheDir, retries: 0 })).rejects.toThrow(new RegExp(`at \\d+ of ${claimed} bytes`));
    await expect(stat(cachedPath())).rejects.toThrow(/ENOENT/);
    const kept = (await stat(partPath())).size;
    expect(kept).toBeGreaterThan(0);
    expect(kept).toBeLessThanOrEqual(MODEL.length);
    // Resuming cannot fix a lie: the server has nothing past its real end, so the download starts over and fails the same way.
    await expect(downloadModel(modelUrl(), { cacheDir, retries: 1 })).rejects.toThrow(new RegExp(`of ${claimed} bytes`));
    await expect(stat(cachedPath())).rejects.toThrow(/ENOENT/);
  });

  it('stops on abort, keeps the partial file, and a later call resumes it', async () => {
    server.state.chunkDelayMs = 5;
    const controller = new AbortController();
    const e = await downloadModel(modelUrl(), {
      cacheDir,
      signal: controller.signal,
      onProgress: (r) => r >= 100_000 && controller.abort(),
    }).catch((err: unknown) => err);
    expect((e as Error).name).toBe('AbortError');
    expect((e as Error).message).toMatch(/download of .* was aborted at \d+ of 1185376 bytes; what arrived is kept for resume/);
    await new Promise((r) => setTimeout(r, 50));
    const kept = (await stat(partPath())).size;
    expect(kept).toBeGreaterThanOrEqual(100_000);
    expect(kept).toBeLessThan(MODEL.length);
    server.state.chunkDelayMs = 0;
    await expectIdentical(await downloadModel(modelUrl(), { cacheDir }));
    expect(modelRequests()[1].range).toMatch(/^bytes=\d+-$/);
  });

  it('shares one transfer between concurrent callers; one giving up does not stop the other', async () => {
    server.state.chunkDelayMs = 2;
    const quitter = new AbortController();
    const seen: number[] = [];
    const a = downloadModel(modelUrl(), { cacheDir, signal: quitter.signal, onProgress: (r) => r > 50_000 && quitter.abort() });
    const b = downloadModel(modelUrl(), { cacheDir, onProgress: (r) => seen.push(r) });
    const c = downloadModel(modelUrl(), { cacheDir });
    await expect(a).rejects.toThrow(/aborted/);
    const [pb, pc] = await Promise.all([b, c]);
    expect(pb).toBe(pc);
    await expectIdentical(pb);
    expect(modelRequests()).toHaveLength(1);
    expect(seen.at(-1)).toBe(MODEL.length);
  });

  it('waits while another live process holds the download lock, then uses its result', async () => {
    await mkdir(cacheDir, { recursive: true });
    const other = spawn('sleep', ['30'], { stdio: 'ignore' });
    try {
      await writeFile(`${cachedPath()}.lock`, String(other.pid));
      let settled = false;
      const p = downloadModel(modelUrl(), { cacheDir }).finally(() => (settled = true));
      await new Promise((r) => setTimeout(r, 600));
      expect(settled).toBe(false);
      expect(modelRequests()).toHaveLength(0);
      // The "other process" finishes: the file appears and the lock goes.
      await copyFile(sharedModel('stories260K.gguf'), cachedPath());
      await rm(`${cachedPath()}.lock`);
      expect(await p).toBe(cachedPath());
      expect(modelRequests()).toHaveLength(0);
    } finally {
      other.kill();
    }
  });

  it('takes over a lock left by a dead process', async () => {
    await mkdir(cacheDir, { recursive: true });
    const gone = spawn('true');
    await new Promise((r) => gone.on('exit', r));
    await writeFile(`${cachedPath()}.lock`, String(gone.pid));
    await expectIdentical(await downloadModel(modelUrl(), { cacheDir }));
    await expect(stat(`${cachedPath()}.lock`)).rejects.toThrow(/ENOENT/);
  });

  it('gives up on a connection that goes silent (stall timeout), keeping what arrived', async () => {
    server.state.chunkDelayMs = 1000;
    await expect(downloadModel(modelUrl(), { cacheDir, retries: 0, stallTimeoutMs: 200 })).rejects.toThrow(/failed while receiving at 16384 of 1185376 bytes: no data for 0.2 s/);
    expect((await stat(partPath())).size).toBe(16384);
  });

  it('names an unreachable server', async () => {
    const url = server.url('/model.gguf');
    await server.close();
    await expect(downloadModel(url, { cacheDir, retries: 0 })).rejects.toThrow(new RegExp(`download of ${url} failed to connect at 0 bytes: fetch failed \\(.*ECONNREFUSED`));
    server = await startModelServer({ bytes: MODEL });
  });

  it('downloads a model that parses', async () => {
    const src = new FileSource(await downloadModel(modelUrl(), { cacheDir }));
    try {
      expect((await parseGguf(src)).tensors).toHaveLength(48);
    } finally {
      await src.close();
    }
  });
});
