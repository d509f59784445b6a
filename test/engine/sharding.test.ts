/**
 * Weights larger than one storage binding are split into row shards (a 128256 x 2048 embedding exceeds
 * compatibility mode's 128 MiB). Here the binding limit is forced down to 64 KiB so the small model's
 * tables are sharded and the stacked gate|up matrix splits across its two tensors; the output must not change.
 * Q8_0 rows go in groups of 8 on CPU rasterisers (weightRowGroup): shards then hold whole groups, and the
 * loader repacks runs of whole groups that may take rows from two stacked tensors.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { WebGpuEngine } from '../../engine/engine.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { sharedModel } from '../helpers/models.ts';
import { greedyRun } from '../helpers/engine.ts';

const fixtures = JSON.parse(readFileSync(new URL('../fixtures/llama-greedy.json', import.meta.url), 'utf8')) as Record<string, { promptTokens: number[]; greedy: number[] }[]>;

describe('row-sharded weights', () => {
  it('greedy output equals llama.cpp with matrices split over 64 KiB bindings', async () => {
    const selected = await openNodeDevice();
    selected.caps = { ...selected.caps, maxStorageBinding: 65536 };
    // A small context and step keep the KV cache and activations inside the lowered limit too.
    const engine = await WebGpuEngine.load(selected, new FileSource(sharedModel('stories260K.gguf')), { contextLength: 256, maxSequences: 2, maxTokensPerStep: 16 });
    try {
      const f = fixtures['stories260K.gguf'][0];
      const r = await engine.generate({ tokens: f.promptTokens, maxTokens: 32, temperature: 0, stopAtEndOfGeneration: false }).result;
      expect(r.tokens).toEqual(f.greedy.slice(0, 32));
      // Unsharded: 22 matrices (embedding, output, 5 x [qkv, o, gate|up, down]) + 11 norm vectors = 33
      // buffers. At 64 KiB per binding (256 rows of 256 bytes) the 512-row embedding and output tables and
      // the 344-row gate|up stacks split in two: 33 + 2 + 5 = 40.
      expect(engine.stats().weightShards).toBe(40);
    } finally {
      await engine.dispose();
    }
  });

  it('Q8_0 rows in groups over 64 KiB bindings: the tokens and log-probabilities of the unsharded model, to the bit', async () => {
    const generate = (engine: WebGpuEngine) => greedyRun(engine, [1, 365, 1321, 266, 1167], 24);
    const load = async (maxStorageBinding?: number) => {
      const selected = await openNodeDevice();
      if (maxStorageBinding) selected.caps = { ...selected.caps, maxStorageBinding };
      return WebGpuEngine.load(selected, new FileSource(sharedModel('TinyStories-656K-Q8_0.gguf')), { contextLength: 256, maxSequences: 2, maxTokensPerStep: 16 });
    };
    const whole = await load();
    const sharded = await load(65536);
    try {
      // More buffers: the 32000-row tables split into many shards, and a stacked matrix or two as well.
      expect(sharded.stats().weightShards).toBeGreaterThan(whole.stats().weightShards + 4);
      const [a, b] = [await generate(whole), await generate(sharded)];
      expect(b.tokens).toEqual(a.tokens);
      expect(b.logprobs).toEqual(a.logprobs);
    } finally {
      await whole.dispose();
      await sharded.dispose();
    }
  });
});
