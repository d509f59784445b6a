/**
 * Bad model files fail with an error that says what is wrong, before anything is uploaded where possible,
 * and the process stays usable: a good model loads right after.
 */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { synthModel } from '../../bench/synth/model.ts';
import { PRESETS } from '../../bench/synth/presets.ts';
import { WebGpuEngine } from '../../engine/engine.ts';
import { encodeGguf, gv, type GgufWriteValue } from '../../engine/gguf/write.ts';
import { GgmlType, tensorByteSize } from '../../ggml/types.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { loadEngine } from '../../engine/node.ts';
import { openNodeDevice } from '../../engine/platform/node.ts';
import { sharedModel } from '../helpers/models.ts';

/** The synthesizer's tiny llama, as bytes, after `edit` changes its metadata or tensor table. */
function tinyModel(edit: (m: { metadata: Record<string, GgufWriteValue>; tensors: { name: string; dims: readonly number[]; type: GgmlType }[] }) => void): Uint8Array {
  const synth = synthModel(PRESETS.tiny, 'f32', 1);
  const metadata = Object.fromEntries(synth.spec.metadata as Iterable<[string, GgufWriteValue]>);
  const tensors = synth.spec.tensors.map((t) => ({ name: t.name, dims: t.dims, type: t.type }));
  edit({ metadata, tensors });
  return encodeGguf({
    metadata,
    tensors: tensors.map((t) => {
      const elements = t.dims.reduce((a, b) => a * b, 1);
      return { ...t, data: new Uint8Array(tensorByteSize(t.type, elements)) };
    }),
  });
}

async function loadBytes(bytes: Uint8Array, name: string): Promise<WebGpuEngine> {
  const selected = await openNodeDevice();
  try {
    return await WebGpuEngine.load(selected, new BytesSource(bytes, name));
  } catch (e) {
    selected.device.destroy();
    throw e;
  }
}

describe('bad model files', () => {
  it('the unmodified tiny model loads and generates (the edits below are the only fault)', async () => {
    const engine = await loadBytes(tinyModel(() => {}), 'tiny.gguf');
    expect((await engine.generate({ tokens: [1, 2, 3], maxTokens: 3, stopAtEndOfGeneration: false }).result).completionTokens).toBe(3);
    await engine.dispose();
  });

  it('names an unsupported architecture', async () => {
    const bytes = tinyModel((m) => (m.metadata['general.architecture'] = gv.string('mamba')));
    await expect(loadBytes(bytes, 'mamba.gguf')).rejects.toThrow(/architecture "mamba" is not supported \(supported: llama/);
  });

  it('names an unsupported tensor type and the tensor', async () => {
    const bytes = tinyModel((m) => {
      const q = m.tensors.find((t) => t.name === 'blk.1.attn_q.weight')!;
      q.type = GgmlType.Q5_0;
    });
    await expect(loadBytes(bytes, 'q5.gguf')).rejects.toThrow(/tensor "blk\.1\.attn_q\.weight" has type Q5_0, which this engine does not support \(supported: F32, F16, Q8_0, Q4_0, Q4_K, Q6_K\)/);
  });

  it('names a missing tensor and a tensor of the wrong shape', async () => {
    const missing = tinyModel((m) => m.tensors.splice(m.tensors.findIndex((t) => t.name === 'blk.0.ffn_down.weight'), 1));
    await expect(loadBytes(missing, 'missing.gguf')).rejects.toThrow(/tensor "blk\.0\.ffn_down\.weight" is missing/);
    const shape = tinyModel((m) => (m.tensors.find((t) => t.name === 'blk.0.attn_k.weight')!.dims = [64, 48]));
    await expect(loadBytes(shape, 'shape.gguf')).rejects.toThrow(/tensor "blk\.0\.attn_k\.weight" has shape \[64, 48\], expected \[64, 32\]/);
  });

  it('says a truncated file is truncated, and a missing one is missing', async () => {
    const whole = readFileSync(sharedModel('stories260K.gguf'));
    await expect(loadBytes(whole.subarray(0, whole.length - 1000), 'cut.gguf')).rejects.toThrow(/cut\.gguf: file is truncated/);
    await expect(loadBytes(whole.subarray(0, 3000), 'cut-header.gguf')).rejects.toThrow(/file is truncated/);
    await expect(loadEngine({ model: '/no/such/model.gguf' })).rejects.toThrow(/\/no\/such\/model\.gguf/);
  });

  it('stays usable: a good model loads after all of the above', async () => {
    const engine = await loadEngine({ model: sharedModel('stories260K.gguf') });
    const r = await engine.generate({ prompt: 'Once upon a time', maxTokens: 5, temperature: 0 }).result;
    expect(r.completionTokens).toBe(5);
    await engine.dispose();
  });
});
