/**
 * Reading LoRA adapter files: F16 and Q8_0 tensors load as the F32 values they hold, and every kind of
 * bad file is refused before anything reaches the GPU, with a message naming the file's fault.
 */
import { describe, expect, it } from 'vitest';
import { encodeLoraAdapter, loraTensorName, type LoraAdapterSpec } from '../../engine/lora/adapter-file.ts';
import { encodeGguf, gv, type GgufWriteValue } from '../../engine/gguf/write.ts';
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { EngineInputError } from '../../engine/types.ts';
import { GgmlType } from '../../ggml/types.ts';
import { randomLoraSpec } from '../../scripts/fixtures/random-lora.ts';
import { readFileSync } from 'node:fs';
import { sharedModel } from '../helpers/models.ts';
import { testEngine } from '../helpers/engine.ts';

const engine = () => testEngine('stories260K.gguf', { grammars: 'in-process', contextLength: 128 });

/** The adapter as a GGUF with its tensors stored as `type`, and metadata edits. */
function encodeAs(spec: LoraAdapterSpec, type: GgmlType, meta: Record<string, GgufWriteValue | undefined> = {}): Uint8Array {
  const metadata: Record<string, GgufWriteValue> = { 'general.architecture': spec.architecture, 'general.type': 'adapter', 'adapter.type': 'lora', 'adapter.lora.alpha': gv.f32(spec.alpha) };
  for (const [k, v] of Object.entries(meta)) {
    if (v === undefined) delete metadata[k];
    else metadata[k] = v;
  }
  const tensors = spec.matrices.flatMap((m) => [
    { name: loraTensorName(m.layer, m.target, 'a'), dims: [m.inDim, m.rank], type, data: quantize(type, m.a) },
    { name: loraTensorName(m.layer, m.target, 'b'), dims: [m.rank, m.outDim], type, data: quantize(type, m.b) },
  ]);
  return encodeGguf({ metadata, tensors });
}

/** The same adapter with every value replaced by what storing it as `type` keeps. */
function roundTrip(spec: LoraAdapterSpec, type: GgmlType): LoraAdapterSpec {
  const rt = (v: Float32Array) => dequantize(type, quantize(type, v), v.length);
  return { ...spec, matrices: spec.matrices.map((m) => ({ ...m, a: rt(m.a), b: rt(m.b) })) };
}

async function expectRefused(bytes: Uint8Array, ...fragments: (string | RegExp)[]): Promise<void> {
  const e = await engine();
  const before = e.adapters();
  const err = await e.loadAdapter(bytes, { name: 'bad.gguf' }).then(
    () => undefined,
    (x: unknown) => x,
  );
  expect(err).toBeInstanceOf(EngineInputError);
  expect((err as EngineInputError).param).toBe('adapter');
  for (const f of fragments) expect((err as Error).message).toMatch(f);
  expect(e.adapters()).toEqual(before);
}

describe('LoRA adapter files', () => {
  // Q8_0 blocks run along a row: B's rows are rank long, and A's rows as long as the input (not ffn 172).
  for (const [type, rank, targets] of [
    [GgmlType.F16, 4, ['q', 'v', 'o', 'down']],
    [GgmlType.Q8_0, 32, ['q', 'v', 'o', 'up']],
  ] as const) {
    it(`${type === GgmlType.F16 ? 'F16' : 'Q8_0'} tensors load as the values they hold (logits equal the F32 file's)`, async () => {
      const e = await engine();
      const spec = roundTrip(randomLoraSpec(e.config, { rank, alpha: 2 * rank, targets, seed: 7, bScale: 0.2 }), type);
      const packedBytes = encodeAs(spec, type);
      const f32 = await e.loadAdapter(encodeLoraAdapter(spec));
      const packed = await e.loadAdapter(packedBytes);
      expect(packed).toMatchObject({ rank, alpha: 2 * rank, targets, layers: 5 });
      const tokens = [1, 403, 407, 261, 378, 432];
      const a = await e.logits(tokens, { adapter: f32.id });
      const b = await e.logits(tokens, { adapter: packed.id });
      const base = await e.logits(tokens);
      for (let p = 0; p < tokens.length; p++) {
        expect(b[p]).toEqual(a[p]);
        expect(a[p]).not.toEqual(base[p]);
      }
      await e.unloadAdapter(f32.id);
      await e.unloadAdapter(packed.id);
    });
  }

  it('refuses a file that is not an adapter (a model)', async () => {
    await expectRefused(new Uint8Array(readFileSync(sharedModel('stories260K.gguf'))), /bad\.gguf/, /not an adapter file/, /general\.type/);
  });

  it('refuses bytes that are not GGUF at all', async () => {
    await expectRefused(new TextEncoder().encode('{"messages": []}\n'.repeat(4)), /not a GGUF file/);
  });

  it('refuses an adapter of another kind than lora', async () => {
    const e = await engine();
    const spec = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['q'], seed: 1 });
    await expectRefused(encodeAs(spec, GgmlType.F32, { 'adapter.type': 'control_vector' }), /adapter\.type is "control_vector"/);
  });

  it('refuses an adapter made for another architecture', async () => {
    const e = await engine();
    const spec = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['q'], seed: 1 });
    await expectRefused(encodeLoraAdapter({ ...spec, architecture: 'qwen2' }), /architecture "qwen2"/, /model is "llama"/);
  });

  it('refuses an adapter for another model of the architecture (shapes differ), naming the tensor', async () => {
    const e = await engine();
    const other = await testEngine('TinyStories-656K-Q8_0.gguf', { grammars: 'in-process', contextLength: 64 });
    const spec = randomLoraSpec(other.config, { rank: 2, alpha: 2, targets: ['k'], seed: 1, layers: [0] });
    await expectRefused(encodeLoraAdapter(spec), /blk\.0\.attn_k\.weight\.lora_a/, /\[128, 2\]/, /takes 64 inputs/);
    expect(e.adapters()).toEqual([]);
  });

  it('refuses an output width that does not match the base matrix', async () => {
    const e = await engine();
    const spec = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['gate'], seed: 1, layers: [2] });
    const m = spec.matrices[0];
    await expectRefused(encodeLoraAdapter({ ...spec, matrices: [{ ...m, outDim: 64, b: new Float32Array(64 * 2) }] }), /blk\.2\.ffn_gate\.weight\.lora_b/, /172 outputs/);
  });

  it('refuses a lora_a without its lora_b', async () => {
    const e = await engine();
    const spec = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['q', 'v'], seed: 1, layers: [1] });
    const bytes = encodeGguf({
      metadata: { 'general.architecture': 'llama', 'general.type': 'adapter', 'adapter.type': 'lora', 'adapter.lora.alpha': gv.f32(2) },
      tensors: spec.matrices.flatMap((m) => [
        { name: loraTensorName(m.layer, m.target, 'a'), dims: [m.inDim, m.rank], type: GgmlType.F32, data: new Uint8Array(m.a.buffer) },
        ...(m.target === 'v' ? [] : [{ name: loraTensorName(m.layer, m.target, 'b'), dims: [m.rank, m.outDim], type: GgmlType.F32, data: new Uint8Array(m.b.buffer) }]),
      ]),
    });
    await expectRefused(bytes, /blk\.1\.attn_v\.weight\.lora_a has no matching blk\.1\.attn_v\.weight\.lora_b/);
  });

  it('refuses ranks that differ between A and B, a transposed A, and ranks over the limit', async () => {
    const e = await engine();
    const [m] = randomLoraSpec(e.config, { rank: 4, alpha: 4, targets: ['o'], seed: 1, layers: [0] }).matrices;
    const file = (tensors: { name: string; dims: number[]; values: Float32Array }[]) =>
      encodeGguf({
        metadata: { 'general.architecture': 'llama', 'general.type': 'adapter', 'adapter.type': 'lora' },
        tensors: tensors.map((t) => ({ name: t.name, dims: t.dims, type: GgmlType.F32, data: new Uint8Array(t.values.buffer) })),
      });
    const a = loraTensorName(0, 'o', 'a');
    const b = loraTensorName(0, 'o', 'b');
    await expectRefused(file([{ name: a, dims: [64, 4], values: m.a }, { name: b, dims: [2, 64], values: new Float32Array(128) }]), /has rank 4 but .*lora_b" has rank 2/);
    await expectRefused(file([{ name: a, dims: [4, 64], values: m.a }, { name: b, dims: [4, 64], values: m.b }]), /looks transposed/);
    await expectRefused(file([{ name: a, dims: [64, 600], values: new Float32Array(64 * 600) }, { name: b, dims: [600, 64], values: new Float32Array(600 * 64) }]), /rank 600; ranks 1\.\.512/);
  });

  it('refuses targets it cannot apply (embeddings, output) and tensors that are not LoRA pairs', async () => {
    const meta = { 'general.architecture': 'llama', 'general.type': 'adapter', 'adapter.type': 'lora' };
    const t = (name: string, dims: number[]) => ({ name, dims, type: GgmlType.F32, data: new Uint8Array(4 * dims[0] * dims[1]) });
    await expectRefused(encodeGguf({ metadata: meta, tensors: [t('token_embd.weight.lora_a', [512, 2]), t('token_embd.weight.lora_b', [2, 64])] }), /"token_embd\.weight\.lora_a" is not a LoRA tensor of a block matrix/);
    await expectRefused(encodeGguf({ metadata: meta, tensors: [t('blk.0.attn_qkv.weight.lora_a', [64, 2]), t('blk.0.attn_qkv.weight.lora_b', [2, 128])] }), /adapts attn_qkv, which is not a supported target/);
    await expectRefused(encodeGguf({ metadata: meta, tensors: [t('blk.9.attn_q.weight.lora_a', [64, 2]), t('blk.9.attn_q.weight.lora_b', [2, 64])] }), /layer 9, but the model has 5 layers/);
    await expectRefused(encodeGguf({ metadata: meta, tensors: [] }), /holds no LoRA tensors/);
  });

  it('refuses non-finite weights and an adapter over the size limit', async () => {
    const e = await engine();
    const spec = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['up'], seed: 1, layers: [3] });
    spec.matrices[0].b[5] = Number.NaN;
    await expectRefused(encodeLoraAdapter(spec), /blk\.3\.ffn_up\.weight\.lora_b" holds a non-finite value \(NaN\) at element 5/);
    const big = await testEngine('stories260K.gguf', { grammars: 'in-process', contextLength: 64, maxAdapterBytes: 1000 });
    const ok = randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['up'], seed: 1, layers: [3] });
    await expect(big.loadAdapter(encodeLoraAdapter(ok))).rejects.toThrow(/needs 1888 bytes of weights as F32, more than the 1000 allowed/);
  });

  it('refuses a bad scale or name at load, and an unknown adapter id at generate and logits', async () => {
    const e = await engine();
    const bytes = encodeLoraAdapter(randomLoraSpec(e.config, { rank: 2, alpha: 2, targets: ['q'], seed: 1 }));
    await expect(e.loadAdapter(bytes, { scale: Number.NaN })).rejects.toThrow(/scale must be a finite number/);
    await expect(e.loadAdapter(bytes, { name: '' })).rejects.toThrow(/name must be a string of 1 to 256 characters/);
    expect(() => e.generate({ tokens: [1, 2], adapter: 'lora-999' })).toThrow(/unknown adapter "lora-999"/);
    await expect(e.logits([1, 2], { adapter: 'nope' })).rejects.toThrow(/unknown adapter "nope"/);
  });
});
