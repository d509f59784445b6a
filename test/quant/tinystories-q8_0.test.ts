import { existsSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { dequantize, quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType } from '../../ggml/types.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { readSafetensorsF32 } from '../helpers/safetensors.ts';

const MODELS = new URL('../../../shared/models/', import.meta.url).pathname;
const GGUF = MODELS + 'TinyStories-656K-Q8_0.gguf';
const HF = MODELS + 'TinyStories-656K-hf/model.safetensors';

describe.skipIf(!existsSync(GGUF) || !existsSync(HF))('Q8_0 blocks of a real model file', () => {
  it('token_embd.weight dequantizes to the F32 weights of the same model', async () => {
    const source = new FileSource(GGUF);
    const gguf = await parseGguf(source);
    const info = gguf.tensors.find((t) => t.name === 'token_embd.weight')!;
    expect(info.type).toBe(GgmlType.Q8_0);
    const [cols, rows] = info.dims;
    const raw = await source.read(info.offset, info.byteSize);
    await source.close?.();
    const ours = dequantize(GgmlType.Q8_0, raw, info.elements);

    const ref = readSafetensorsF32(HF, 'model.embed_tokens.weight');
    expect(ref.shape).toEqual([rows, cols]);
    // Per block of 32: |x - d*q| <= d/2 plus the f16 rounding of d (at most 127 * d * 2^-11).
    let worst = 0;
    for (let b = 0; b < info.elements / 32; b++) {
      let amax = 0;
      for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(ref.data[b * 32 + j]));
      for (let j = 0; j < 32; j++) {
        const err = Math.abs(ours[b * 32 + j] - ref.data[b * 32 + j]);
        worst = Math.max(worst, err / Math.max(amax / 127, 1e-30));
      }
    }
    expect(worst).toBeLessThan(0.57);
    // The file was quantized from these very weights, so requantizing them gives back its bytes.
    expect(Buffer.from(quantize(GgmlType.Q8_0, ref.data)).equals(Buffer.from(raw))).toBe(true);
  });
});
