/**
 * LoRA on the kernels a real GPU gets, where the QKV and gate|up products fold the RMSNorm in and
 * decode steps run matrix-vector variants: SwiftShader with its caps marked as not software, as in
 * gpu-variants.test.ts. Layers with adapted products fall back to the unfused norm (LoRA's A must read
 * the normed x), and the output still matches llama.cpp's with the adapter.
 */
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { WebGpuEngine } from '../../engine/engine.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import type { LoraParityFixture } from '../../scripts/fixtures/lora-parity.ts';
import { fixtureLora } from '../../scripts/fixtures/random-lora.ts';
import { sharedModel } from '../helpers/models.ts';

const fixture = JSON.parse(readFileSync(new URL('../fixtures/lora-parity.json', import.meta.url), 'utf8')) as LoraParityFixture;

describe('LoRA on the GPU kernel variants (stories260K on SwiftShader as a GPU)', () => {
  let engine: WebGpuEngine | undefined;
  afterAll(async () => {
    await engine?.dispose();
  });

  it('keeps llama.cpp parity and the base dispatches of steps without adapter rows', async () => {
    const selected = await openNodeDevice('swiftshader');
    selected.caps = { ...selected.caps, software: false };
    engine = await WebGpuEngine.load(selected, new FileSource(sharedModel('stories260K.gguf')), { contextLength: 256, maxSequences: 2 });
    const c = fixture.cases.find((x) => x.adapter === 'stories260K-r4')!;
    const g = c.greedy!;
    const plain = await engine.generate({ tokens: g.promptTokens, maxTokens: 4, temperature: 0, stopAtEndOfGeneration: false }).result;
    // embedding + 5 layers × (QKV with norm, attention with RoPE and the KV store, O, gate|up with norm,
    // down) + head with the final norm + two sampling passes.
    expect(engine.stats().lastStepDispatches).toBe(1 + 5 * 5 + 3);
    const h = await engine.loadAdapter(await fixtureLora(c.adapter), { scale: c.scale });
    const r = await engine.generate({ tokens: g.promptTokens, maxTokens: g.tokens.length, temperature: 0, stopAtEndOfGeneration: false, adapter: h.id }).result;
    expect(r.tokens).toEqual(g.tokens);
    // Per layer: both norms as passes again, the gated activation as its own pass, and A and B of 4 groups.
    expect(engine.stats().lastStepDispatches).toBe(1 + 5 * (5 + 3 + 8) + 3);
    // Multi-token steps too (two tokens a step here, still norm-fused for the base model).
    const logits = await engine.logits(c.tokens, { adapter: h.id });
    for (const p of c.positions) {
      const l = logits[p.index];
      let max = -Infinity;
      for (const v of l) max = Math.max(max, v);
      let sum = 0;
      for (const v of l) sum += Math.exp(v - max);
      const lse = max + Math.log(sum);
      p.logprobs!.forEach((lp, i) => {
        if (lp > Math.log(1e-4)) expect(Math.abs(l[i] - lse - lp)).toBeLessThan(0.02);
      });
    }
    const again = await engine.generate({ tokens: g.promptTokens, maxTokens: 4, temperature: 0, stopAtEndOfGeneration: false }).result;
    expect(again.tokens).toEqual(plain.tokens);
    expect(engine.stats().lastStepDispatches).toBe(1 + 5 * 5 + 3);
  });
});
