import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { checkWithLlamaCpp } from '../../bench/synth/llama-cpp-check.ts';
import { synthModel, llama3RopeFactors, WEIGHT_STD } from '../../bench/synth/model.ts';
import { PRESETS, preset } from '../../bench/synth/presets.ts';
import { synthesizeToFile } from '../../bench/synth/synthesize-node.ts';
import { byteLevelAlphabet, synthesizeVocab, TOKEN_CONTROL, TOKEN_NORMAL } from '../../bench/synth/vocab.ts';
import { parseGguf, type GgufFile } from '../../engine/gguf/parse.ts';
import { dequantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { planGguf } from '../../engine/gguf/write.ts';
import { FileSource } from '../../engine/loader/file-source.ts';

const dir = await mkdtemp(join(tmpdir(), 'svc-synth-'));
afterAll(() => rm(dir, { recursive: true, force: true }));

async function parseFile(path: string): Promise<GgufFile> {
  const src = new FileSource(path);
  try {
    return await parseGguf(src);
  } finally {
    await src.close();
  }
}

async function tensorValues(path: string, g: GgufFile, name: string): Promise<Float32Array> {
  const t = g.tensors.find((x) => x.name === name)!;
  const src = new FileSource(path);
  try {
    return dequantize(t.type, await src.read(t.offset, t.byteSize), t.elements);
  } finally {
    await src.close();
  }
}

describe('synthesized tiny model', () => {
  it('has the tiny preset shapes, F32 norms, valid metadata, and loads and runs in llama.cpp', async () => {
    const path = join(dir, 'tiny-q8_0.gguf');
    const progress: number[] = [];
    const layout = await synthesizeToFile(path, { preset: 'tiny', type: 'q8_0', seed: 7, onProgress: (done) => progress.push(done) });
    const g = await parseFile(path);
    expect(g.fileSize).toBe(layout.fileSize);
    expect(progress.at(-1)).toBe(layout.fileSize);

    const p = PRESETS.tiny;
    expect(g.tensors).toHaveLength(p.layers * 9 + 2);
    const shape = Object.fromEntries(g.tensors.map((t) => [t.name, `${typeName(t.type)} [${t.dims.join(', ')}]`]));
    expect(shape['token_embd.weight']).toBe('Q8_0 [64, 512]');
    expect(shape['output.weight']).toBeUndefined();
    expect(shape['output_norm.weight']).toBe('F32 [64]');
    expect(shape['blk.1.attn_norm.weight']).toBe('F32 [64]');
    expect(shape['blk.1.attn_q.weight']).toBe('Q8_0 [64, 64]');
    expect(shape['blk.1.attn_k.weight']).toBe('Q8_0 [64, 32]');
    expect(shape['blk.1.attn_v.weight']).toBe('Q8_0 [64, 32]');
    expect(shape['blk.1.attn_output.weight']).toBe('Q8_0 [64, 64]');
    expect(shape['blk.1.ffn_gate.weight']).toBe('Q8_0 [64, 128]');
    expect(shape['blk.1.ffn_up.weight']).toBe('Q8_0 [64, 128]');
    expect(shape['blk.1.ffn_down.weight']).toBe('Q8_0 [128, 64]');

    const m = g.metadata;
    expect(m.string('general.architecture')).toBe('llama');
    expect(m.number('general.file_type')).toBe(7);
    expect(m.number('llama.block_count')).toBe(2);
    expect(m.number('llama.attention.head_count_kv')).toBe(2);
    expect(m.number('llama.rope.freq_base')).toBe(10000);
    expect(m.string('tokenizer.ggml.model')).toBe('gpt2');
    expect(m.strings('tokenizer.ggml.tokens')).toHaveLength(512);
    expect(m.strings('tokenizer.ggml.tokens')[m.number('tokenizer.ggml.eos_token_id')]).toBe('<|im_end|>');

    // Weights: norms exactly 1, matrices ~N(0, 0.02) after Q8_0.
    expect(new Set(await tensorValues(path, g, 'blk.0.ffn_norm.weight'))).toEqual(new Set([1]));
    const w = await tensorValues(path, g, 'blk.1.ffn_up.weight');
    const mean = w.reduce((a, b) => a + b, 0) / w.length;
    const std = Math.sqrt(w.reduce((a, b) => a + (b - mean) ** 2, 0) / w.length);
    expect(Math.abs(mean)).toBeLessThan(0.002);
    expect(std).toBeGreaterThan(WEIGHT_STD * 0.95);
    expect(std).toBeLessThan(WEIGHT_STD * 1.05);

    const run = await checkWithLlamaCpp(path);
    expect(run.roundTrip).toBe('Hello world, the quick brown fox.\nNew line 123 ☃');
    expect(run.promptTokens.every((t) => t >= 0 && t < 512)).toBe(true);
    expect(run.generated).toHaveLength(4);
    expect(run.confidences.every((c) => Number.isFinite(c) && c > 0 && c <= 1)).toBe(true);
  });

  it('is deterministic for a seed and differs between seeds only in the weights', async () => {
    const a = join(dir, 'a.gguf');
    const b = join(dir, 'b.gguf');
    const c = join(dir, 'c.gguf');
    await synthesizeToFile(a, { preset: 'tiny', type: 'f16', seed: 1 });
    await synthesizeToFile(b, { preset: 'tiny', type: 'f16', seed: 1 });
    await synthesizeToFile(c, { preset: 'tiny', type: 'f16', seed: 2 });
    const [ba, bb, bc] = await Promise.all([readFile(a), readFile(b), readFile(c)]);
    expect(Buffer.compare(ba, bb)).toBe(0);
    expect(Buffer.compare(ba, bc)).not.toBe(0);
    const [ga, gc] = await Promise.all([parseFile(a), parseFile(c)]);
    expect(gc.tensors).toEqual(ga.tensors);
    expect(gc.metadata.strings('tokenizer.ggml.merges')).toEqual(ga.metadata.strings('tokenizer.ggml.merges'));
  });

  // The real-size check, opt-in because it writes 145 MB: SVC_SYNTH_FULL=1 npx vitest run test/gguf/synth.test.ts
  it.runIf(process.env.SVC_SYNTH_FULL)('smollm2-135m q8_0 synthesizes and runs in llama.cpp', async () => {
    const path = join(dir, 'smollm2-q8_0.gguf');
    const layout = await synthesizeToFile(path, { preset: 'smollm2-135m', type: 'q8_0' });
    expect(layout.tensors).toHaveLength(272);
    const run = await checkWithLlamaCpp(path);
    expect(run.roundTrip).toBe('Hello world, the quick brown fox.\nNew line 123 ☃');
    expect(run.confidences.every((c) => Number.isFinite(c) && c > 0)).toBe(true);
  });

  for (const type of ['f32', 'f16', 'q4_0'] as const) {
    it(`writes ${type} weights that parse and load in llama.cpp`, async () => {
      const path = join(dir, `tiny-${type}.gguf`);
      await synthesizeToFile(path, { preset: 'tiny', type });
      const g = await parseFile(path);
      const want = { f32: GgmlType.F32, f16: GgmlType.F16, q4_0: GgmlType.Q4_0 }[type];
      expect(g.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!.type).toBe(want);
      const run = await checkWithLlamaCpp(path, 'Once upon a time', 2);
      expect(run.confidences.every(Number.isFinite)).toBe(true);
    });
  }
});

describe('presets of real models', () => {
  /** Parameters the way model cards count them (rope_freqs is not a parameter). */
  function params(name: string): { count: number; tensors: number; fileSize: number } {
    const { spec } = synthModel(preset(name), 'q8_0', 1);
    const count = spec.tensors.filter((t) => t.name !== 'rope_freqs.weight').reduce((n, t) => n + t.dims.reduce((a, b) => a * b, 1), 0);
    return { count, tensors: spec.tensors.length, fileSize: planGguf(spec).layout.fileSize };
  }

  it('smollm2-135m has SmolLM2-135M\'s 134,515,008 parameters in 272 tensors', () => {
    const p = params('smollm2-135m');
    expect(p.count).toBe(134_515_008);
    expect(p.tensors).toBe(272);
  });

  it('llama-3.2-1b has Llama 3.2 1B\'s 1,235,814,400 parameters in 147 tensors (with rope_freqs)', () => {
    const p = params('llama-3.2-1b');
    expect(p.count).toBe(1_235_814_400);
    expect(p.tensors).toBe(147);
    const { spec } = synthModel(preset('llama-3.2-1b'), 'f16', 1);
    expect(spec.tensors.find((t) => t.name === 'rope_freqs.weight')).toMatchObject({ dims: [32], type: GgmlType.F32 });
  });

  it("q4_k_m mixes Q4_K and Q6_K as llama.cpp's Q4_K_M: Q6_K for the tied head and for attn_v and ffn_down in the first and last eighth and every third layer between", () => {
    const { spec } = synthModel(preset('llama-3.2-1b'), 'q4_k_m', 1);
    const types = new Map(spec.tensors.map((t) => [t.name, typeName(t.type)]));
    expect(types.get('token_embd.weight')).toBe('Q6_K');
    const q6Layers = (m: string) => Array.from({ length: 16 }, (_, i) => i).filter((i) => types.get(`blk.${i}.${m}.weight`) === 'Q6_K');
    // llama.cpp's use_more_bits(i, 16): i < 2, i >= 14, or (i - 2) % 3 == 2.
    expect(q6Layers('attn_v')).toEqual([0, 1, 4, 7, 10, 13, 14, 15]);
    expect(q6Layers('ffn_down')).toEqual([0, 1, 4, 7, 10, 13, 14, 15]);
    for (const m of ['attn_q', 'attn_k', 'attn_output', 'ffn_gate', 'ffn_up']) expect(q6Layers(m)).toEqual([]);
    expect(types.get('blk.3.ffn_up.weight')).toBe('Q4_K');
    expect(types.get('blk.3.attn_norm.weight')).toBe('F32');
    expect([...(spec.metadata as Iterable<readonly [string, unknown]>)].find(([k]) => k === 'general.file_type')?.[1]).toMatchObject({ value: 15 });
    // SmolLM2's 576-wide rows are no whole number of 256-element K-quant blocks.
    expect(() => synthModel(preset('smollm2-135m'), 'q4_k_m', 1)).toThrow(/token_embd.weight: rows of 576 values are no whole number of K-quant blocks \(256\): this preset cannot be q4_k_m/);
  });

  it('computes the llama3 rope factors as the converter does', () => {
    const f = llama3RopeFactors(64, 500000, { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 });
    expect(f[0]).toBe(1);
    expect(f[31]).toBe(32);
    // High frequencies untouched, low ones scaled by the factor, a smooth ramp between.
    expect([...f].every((v, i) => i === 0 || v >= f[i - 1])).toBe(true);
    expect(f.filter((v) => v > 1 && v < 32).length).toBeGreaterThan(0);
  });
});

describe('synthetic byte-level vocabulary', () => {
  for (const [name, at] of [['smollm2-135m', 'start'], ['llama-3.2-1b', 'end']] as const) {
    it(`${name}: exact size, unique texts, every merge makes the next token`, () => {
      const p = preset(name);
      const v = synthesizeVocab(p.vocab, p.tokenizer.specials, p.tokenizer.specialsAt);
      expect(v.tokens).toHaveLength(p.vocab);
      expect(new Set(v.tokens).size).toBe(p.vocab);
      const specials = p.tokenizer.specials.length;
      const first = at === 'start' ? specials : 0;
      // Byte tokens first (GPT-2 order), then one token per merge, in merge order.
      expect(v.tokens.slice(first, first + 256)).toEqual(byteLevelAlphabet());
      expect(v.merges).toHaveLength(p.vocab - specials - 256);
      const index = new Map(v.tokens.map((t, i) => [t, i]));
      const bad = v.merges.filter((merge, r) => {
        const [left, right] = merge.split(' ');
        return !(index.has(left) && index.has(right) && index.get(left + right) === first + 256 + r);
      });
      expect(bad).toEqual([]);
      expect(v.types.filter((t) => t === TOKEN_CONTROL)).toHaveLength(specials);
      expect(v.types.filter((t) => t === TOKEN_NORMAL)).toHaveLength(p.vocab - specials);
      expect(v.tokens).toContain('Ċ');
    });
  }
});
