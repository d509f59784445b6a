import { readFile } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { FetchSource } from '../../engine/loader/fetch-source.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { sharedModel } from '../helpers/models.ts';
import { startModelServer, type ModelServer } from './model-server.ts';

const PATH = sharedModel('TinyStories-656K-Q8_0.gguf');
const MODEL = new Uint8Array(await readFile(PATH));

let server: ModelServer;
beforeEach(async () => {
  server = await startModelServer({ bytes: MODEL });
});
afterEach(() => server.close());

/** Parses through `src` and reads every tensor, checking the bytes against the file on disk. */
async function parseAndReadAll(src: FetchSource) {
  const g = await parseGguf(src);
  const file = new FileSource(PATH);
  const fromFile = await parseGguf(file).finally(() => file.close());
  expect(g.tensors).toEqual(fromFile.tensors);
  for (const t of g.tensors) {
    expect(Buffer.compare(await src.read(t.offset, t.byteSize), MODEL.subarray(t.offset, t.offset + t.byteSize))).toBe(0);
  }
  return g;
}

describe('FetchSource', () => {
  it('reads ranges on demand from a server that honours Range, never the whole file', async () => {
    const src = new FetchSource(server.url('/model.gguf'));
    expect(await src.size()).toBe(MODEL.length);
    await parseAndReadAll(src);
    expect(server.requests.every((r) => r.status === 206 && /^bytes=\d+-\d+$/.test(r.range ?? ''))).toBe(true);
    // The 1-byte size probe, the header window, one request per tensor.
    expect(server.requests).toHaveLength(2 + 20);
  });

  it('falls back to one whole-body fetch when the server ignores Range', async () => {
    server.state.range = false;
    const src = new FetchSource(server.url('/model.gguf'));
    await parseAndReadAll(src);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0]).toMatchObject({ range: 'bytes=0-0', status: 200 });
  });

  it('follows redirects', async () => {
    const src = new FetchSource(server.url('/redirect/model.gguf'));
    expect(await src.size()).toBe(MODEL.length);
    expect(await src.read(0, 4)).toEqual(new TextEncoder().encode('GGUF'));
  });

  it('names the URL and status on a 404, and a read past the end', async () => {
    const missing = new FetchSource(server.url('/missing.gguf'));
    await expect(missing.size()).rejects.toThrow(`${server.url('/missing.gguf')}: HTTP 404 Not Found for range bytes=0-0`);
    const src = new FetchSource(server.url('/model.gguf'));
    await expect(src.read(MODEL.length - 2, 4)).rejects.toThrow(`${server.url('/model.gguf')}: read of 4 bytes at ${MODEL.length - 2} runs past the end (${MODEL.length} bytes)`);
  });

  it('reports a server that sends fewer bytes than it announced', async () => {
    server.state.range = false;
    server.state.claimLength = MODEL.length + 10;
    const src = new FetchSource(server.url('/model.gguf'));
    await expect(src.size()).rejects.toThrow(new RegExp(`${server.url('/model.gguf')}: (the response broke off|the server announced ${MODEL.length + 10} bytes but sent)`));
  });
});
