/** The real engine on the shared test models, loaded once per test file (one GPU device per worker). */
import { isAbsolute } from 'node:path';
import { afterAll, expect } from 'vitest';
import { WebGpuEngine, type EngineOptions } from '../../engine/engine.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { loadEngine, type NodeEngineOptions } from '../../engine/node.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { sharedModel } from './models.ts';

const engines = new Map<string, Promise<WebGpuEngine>>();
const gpuKernelEngines: WebGpuEngine[] = [];

export function testEngine(file = 'stories260K.gguf', opts: Omit<NodeEngineOptions, 'model'> = {}): Promise<WebGpuEngine> {
  const key = `${file}|${JSON.stringify(opts)}`;
  let e = engines.get(key);
  if (!e) {
    e = loadEngine({ model: sharedModel(file), ...opts });
    engines.set(key, e);
  }
  return e;
}

/**
 * An engine on SwiftShader with its caps marked as not software, so the device layer picks the kernels a
 * real GPU gets (no GPU needed); disposed after the file's tests. `file`: a shared test model's name, or a path.
 */
export async function gpuKernelsEngine(file: string, opts: EngineOptions): Promise<WebGpuEngine> {
  const selected = await openNodeDevice('swiftshader');
  selected.caps = { ...selected.caps, software: false };
  const engine = await WebGpuEngine.load(selected, new FileSource(isAbsolute(file) ? file : sharedModel(file)), opts);
  gpuKernelEngines.push(engine);
  return engine;
}

/** Greedy runs of two engines: the same tokens, each log-probability within `tolerance`. */
export function expectSameGreedy(a: { tokens: number[]; logprobs: number[] }[], b: { tokens: number[]; logprobs: number[] }[], tolerance = 1e-4): void {
  a.forEach((r, i) => {
    expect(r.tokens, `sequence ${i}`).toEqual(b[i].tokens);
    r.logprobs.forEach((lp, j) => expect(Math.abs(lp - b[i].logprobs[j]), `sequence ${i} token ${j}`).toBeLessThan(tolerance));
  });
}

/** Greedy generation of `maxTokens` tokens from `tokens` (no early stop): the tokens and their log-probabilities, as streamed. */
export async function greedyRun(engine: WebGpuEngine, tokens: number[], maxTokens: number): Promise<{ tokens: number[]; logprobs: number[] }> {
  const out = { tokens: [] as number[], logprobs: [] as number[] };
  for await (const c of engine.generate({ tokens, maxTokens, temperature: 0, stopAtEndOfGeneration: false })) {
    out.tokens.push(...c.tokens);
    out.logprobs.push(...c.logprobs);
  }
  return out;
}

afterAll(async () => {
  for (const e of engines.values()) await (await e.catch(() => undefined))?.dispose();
  engines.clear();
  for (const e of gpuKernelEngines.splice(0)) await e.dispose();
});
