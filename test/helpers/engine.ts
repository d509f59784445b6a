/** The real engine on the shared test models, loaded once per test file (one GPU device per worker). */
import { afterAll } from 'vitest';
import type { WebGpuEngine } from '../../engine/engine.ts';
import { loadEngine, type NodeEngineOptions } from '../../engine/node.ts';
import { sharedModel } from './models.ts';

const engines = new Map<string, Promise<WebGpuEngine>>();

export function testEngine(file = 'stories260K.gguf', opts: Omit<NodeEngineOptions, 'model'> = {}): Promise<WebGpuEngine> {
  const key = `${file}|${JSON.stringify(opts)}`;
  let e = engines.get(key);
  if (!e) {
    e = loadEngine({ model: sharedModel(file), ...opts });
    engines.set(key, e);
  }
  return e;
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
});
