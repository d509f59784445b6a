import { describe, expect, it } from 'vitest';
import { parseGguf, type GgufFile } from '../../engine/gguf/parse.ts';
import { GgmlType, typeName } from '../../ggml/types.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { sharedModel } from '../helpers/models.ts';

async function parseShared(file: string): Promise<GgufFile> {
  const src = new FileSource(sharedModel(file));
  try {
    return await parseGguf(src);
  } finally {
    await src.close();
  }
}

function shapes(g: GgufFile): Record<string, string> {
  return Object.fromEntries(g.tensors.map((t) => [t.name, `${typeName(t.type)} [${t.dims.join(', ')}]`]));
}

function typeCounts(g: GgufFile): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const t of g.tensors) counts[typeName(t.type)] = (counts[typeName(t.type)] ?? 0) + 1;
  return counts;
}

/** Tensors laid out back to back from the data offset, each padded to the alignment, ending at the file's end. */
function expectContiguous(g: GgufFile) {
  let at = g.dataOffset;
  for (const t of [...g.tensors].sort((a, b) => a.offset - b.offset)) {
    expect(t.offset, t.name).toBe(at);
    at += Math.ceil(t.byteSize / g.alignment) * g.alignment;
  }
  expect(at).toBe(g.fileSize);
}

describe('real models parse with the expected tables', () => {
  it('stories260K.gguf: 5 layers, dim 64, GQA 8/4, ffn 172, separate output, all F32', async () => {
    const g = await parseShared('stories260K.gguf');
    expect(g.version).toBe(3);
    expect(g.fileSize).toBe(1_185_376);
    expect(g.tensors).toHaveLength(5 * 9 + 3);
    expect(typeCounts(g)).toEqual({ F32: 48 });
    const s = shapes(g);
    expect(s['token_embd.weight']).toBe('F32 [64, 512]');
    expect(s['output.weight']).toBe('F32 [64, 512]');
    expect(s['output_norm.weight']).toBe('F32 [64]');
    expect(s['blk.4.attn_q.weight']).toBe('F32 [64, 64]');
    expect(s['blk.4.attn_k.weight']).toBe('F32 [64, 32]');
    expect(s['blk.4.attn_v.weight']).toBe('F32 [64, 32]');
    expect(s['blk.4.ffn_gate.weight']).toBe('F32 [64, 172]');
    expect(s['blk.4.ffn_down.weight']).toBe('F32 [172, 64]');
    expect(g.metadata.string('general.architecture')).toBe('llama');
    expect(g.metadata.number('llama.block_count')).toBe(5);
    expect(g.metadata.number('llama.attention.head_count_kv')).toBe(4);
    expect(g.metadata.strings('tokenizer.ggml.tokens')).toHaveLength(512);
    expectContiguous(g);
  });

  it('TinyStories-656K-Q8_0.gguf: 2 layers, tied embedding, 15 Q8_0 tensors + 5 F32 norms', async () => {
    const g = await parseShared('TinyStories-656K-Q8_0.gguf');
    expect(g.tensors).toHaveLength(2 * 9 + 2);
    expect(typeCounts(g)).toEqual({ Q8_0: 15, F32: 5 });
    const s = shapes(g);
    expect(s['token_embd.weight']).toBe('Q8_0 [128, 2048]');
    expect(s['output.weight']).toBeUndefined();
    expect(s['blk.1.attn_k.weight']).toBe('Q8_0 [128, 64]');
    expect(s['blk.1.ffn_down.weight']).toBe('Q8_0 [384, 128]');
    expect(s['blk.1.ffn_norm.weight']).toBe('F32 [128]');
    expect(g.tensors.find((t) => t.name === 'token_embd.weight')!.byteSize).toBe((128 * 2048 / 32) * 34);
    expect(g.metadata.number('general.file_type')).toBe(7);
    expect(g.metadata.number('llama.rope.freq_base')).toBe(10000);
    expect(g.metadata.strings('tokenizer.ggml.tokens')).toHaveLength(2048);
    expectContiguous(g);
  });

  it('llama-2-tiny-random.gguf: 1 layer, dim 8, F16 matrices, F32 norms, 32000-token vocab', async () => {
    const g = await parseShared('llama-2-tiny-random.gguf');
    expect(g.tensors).toHaveLength(12);
    expect(typeCounts(g)).toEqual({ F16: 9, F32: 3 });
    const s = shapes(g);
    expect(s['token_embd.weight']).toBe('F16 [8, 32000]');
    expect(s['output.weight']).toBe('F16 [8, 32000]');
    expect(s['blk.0.ffn_up.weight']).toBe('F16 [8, 32]');
    expect(s['blk.0.attn_norm.weight']).toBe('F32 [8]');
    expect(g.tensors.every((t) => t.type === GgmlType.F16 || t.type === GgmlType.F32)).toBe(true);
    expect(g.metadata.strings('tokenizer.ggml.tokens')).toHaveLength(32000);
    expect((g.metadata.array('tokenizer.ggml.scores') as Float32Array).length).toBe(32000);
    expectContiguous(g);
  });
});
