/**
 * Uploads a GGUF model's weights to the GPU tensor by tensor, a few MiB of rows at a time, so host memory
 * never holds the model twice. Matrices stay in their packed types; norm vectors become f32.
 */
import type { ModelConfig } from '../arch/types.ts';
import type { GgufFile, GgufTensorInfo } from '../gguf/parse.ts';
import { dequantize } from '../gguf/quant/index.ts';
import { GgmlType, SUPPORTED_TYPES, typeName } from '../../ggml/types.ts';
import type { ModelSource } from '../loader/source.ts';
import type { KernelContext } from '../../kernels/runtime/context.ts';
import type { MatrixKernels, WeightMatrix } from './matrix.ts';
import type { LayerWeights, ModelWeights } from './weights.ts';
import { concatBytes } from '../bytes.ts';
import { createWeightStore, weightStoreBytes, writeWeights, type WeightStore } from '../../kernels/runtime/weights.ts';

const CHUNK_BYTES = 8 << 20;

export type LoadProgress = (loadedBytes: number, totalBytes: number) => void;

export async function loadWeights(
  ctx: KernelContext,
  gguf: GgufFile,
  source: ModelSource,
  cfg: ModelConfig,
  kernels: MatrixKernels,
  onProgress?: LoadProgress,
): Promise<ModelWeights> {
  const byName = new Map(gguf.tensors.map((t) => [t.name, t]));
  const buffers: WeightStore[] = [];
  const qDim = cfg.nHeads * cfg.headDim;
  const kvDim = cfg.nKvHeads * cfg.headDim;

  const tensor = (name: string): GgufTensorInfo => {
    const t = byName.get(name);
    if (!t) throw new Error(`${gguf.source}: tensor "${name}" is missing (architecture ${cfg.architecture})`);
    return t;
  };
  const needed: { name: string; kind: 'matrix' | 'vector'; rows: number; cols: number }[] = [];
  const need = (name: string, kind: 'matrix' | 'vector', rows: number, cols: number) => needed.push({ name, kind, rows, cols });
  need('token_embd.weight', 'matrix', cfg.vocabSize, cfg.dim);
  need('output_norm.weight', 'vector', 1, cfg.dim);
  if (!cfg.tiedEmbeddings) need('output.weight', 'matrix', cfg.vocabSize, cfg.dim);
  // Each layer's tensors by role, as the block variant names them. Q/K/V and gate/up: one fused tensor
  // or several, each with its rows; biases and per-head norms are vectors.
  const bv = cfg.block;
  const qkvParts: [string, number][] = bv.fusedQkv ? [['attn_qkv', qDim + 2 * kvDim]] : [['attn_q', qDim], ['attn_k', kvDim], ['attn_v', kvDim]];
  const gateUpParts: [string, number][] = bv.fusedGateUp ? [['ffn_up', 2 * cfg.ffnDim]] : [['ffn_gate', cfg.ffnDim], ['ffn_up', cfg.ffnDim]];
  const layerTensors = (b: string) => ({
    qkv: qkvParts.map(([n]) => `${b}${n}.weight`),
    qkvBias: bv.qkvBias ? qkvParts.map(([n]) => `${b}${n}.bias`) : undefined,
    qkNorm: bv.qkNorm ? [`${b}attn_q_norm.weight`, `${b}attn_k_norm.weight`] : undefined,
    gateUp: gateUpParts.map(([n]) => `${b}${n}.weight`),
  });
  for (let l = 0; l < cfg.nLayers; l++) {
    const b = `blk.${l}.`;
    need(b + 'attn_norm.weight', 'vector', 1, cfg.dim);
    for (const [n, rows] of qkvParts) {
      need(`${b}${n}.weight`, 'matrix', rows, cfg.dim);
      if (bv.qkvBias) need(`${b}${n}.bias`, 'vector', 1, rows);
    }
    if (bv.qkNorm) {
      need(b + 'attn_q_norm.weight', 'vector', 1, cfg.headDim);
      need(b + 'attn_k_norm.weight', 'vector', 1, cfg.headDim);
    }
    need(b + 'attn_output.weight', 'matrix', cfg.dim, qDim);
    need(b + 'ffn_norm.weight', 'vector', 1, cfg.dim);
    for (const [n, rows] of gateUpParts) need(`${b}${n}.weight`, 'matrix', rows, cfg.dim);
    need(b + 'ffn_down.weight', 'matrix', cfg.dim, cfg.ffnDim);
  }
  const hasRopeFactors = byName.has('rope_freqs.weight');
  if (hasRopeFactors) need('rope_freqs.weight', 'vector', 1, cfg.rope.nRot / 2);

  // Check every tensor before uploading anything, so a bad file fails fast with a precise message.
  for (const n of needed) {
    const t = tensor(n.name);
    const [cols, rows = 1] = t.dims;
    if (cols !== n.cols || rows !== n.rows || t.dims.length > 2) {
      throw new Error(`${gguf.source}: tensor "${n.name}" has shape [${t.dims.join(', ')}], expected [${n.cols}${n.kind === 'matrix' ? `, ${n.rows}` : ''}]`);
    }
    const ok = n.kind === 'vector' ? [GgmlType.F32, GgmlType.F16].includes(t.type) : SUPPORTED_TYPES.includes(t.type);
    if (!ok) {
      throw new Error(
        `${gguf.source}: tensor "${n.name}" has type ${typeName(t.type)}, which this engine does not support (supported: ${SUPPORTED_TYPES.map(typeName).join(', ')})`,
      );
    }
  }
  const total = needed.reduce((s, n) => s + tensor(n.name).byteSize, 0);
  let loaded = 0;
  const progress = (bytes: number) => {
    loaded += bytes;
    onProgress?.(loaded, total);
  };

  /** One f32 buffer holding the named vectors one after another (stacked biases, [q_norm | k_norm]). */
  const vector = async (...names: string[]): Promise<GPUBuffer> => {
    const parts = names.map(tensor);
    const f32 = new Float32Array(parts.reduce((n, t) => n + t.elements, 0));
    let at = 0;
    for (const t of parts) {
      const raw = await source.read(t.offset, t.byteSize);
      f32.set(t.type === GgmlType.F32 ? new Float32Array(new Uint8Array(raw).buffer) : dequantize(t.type, raw, t.elements), at);
      at += t.elements;
      progress(t.byteSize);
    }
    const b = ctx.storage(names.join('+'), f32.byteLength, f32);
    buffers.push(b);
    return b;
  };

  /**
   * One weight matrix on the GPU from the rows of one or more tensors, stacked in order. Q/K/V (and
   * gate/up) of the same type become one matrix, so one dispatch computes them all: their outputs land
   * side by side in each token's row, which is how the workspace lays them out anyway.
   */
  const matrix = async (...names: string[]): Promise<WeightMatrix> => {
    const parts = names.map(tensor);
    const { type } = parts[0];
    const cols = parts[0].dims[0];
    const rows = parts.reduce((n, t) => n + t.dims[1], 0);
    const { gpuRowBytes, shardRows, rowGroup, bufferBytes } = kernels.layout(type, rows, cols);
    // Each part's rows: [first, first + count) of the stacked matrix.
    let first = 0;
    const spans = parts.map((t) => {
      const span = { t, first, count: t.dims[1], rawRowBytes: t.byteSize / t.dims[1] };
      first += span.count;
      return span;
    });
    const label = names.length === 1 ? names[0] : names.join('+');
    const shards: WeightMatrix['shards'] = [];
    // Every part has the same type and width, so the same bytes a row.
    const rawRowBytes = spans[0].rawRowBytes;
    if (spans.some((sp) => sp.rawRowBytes !== rawRowBytes)) throw new Error(`${label}: stacked tensors with rows of different sizes`);
    // Chunks of whole row groups (the layout may lay rows out in groups, which can straddle two parts).
    const chunkRows = Math.max(rowGroup, Math.floor(CHUNK_BYTES / rawRowBytes / rowGroup) * rowGroup);
    for (let rowStart = 0; rowStart < rows; rowStart += shardRows) {
      const n = Math.min(shardRows, rows - rowStart);
      const store = createWeightStore(ctx.device, ctx.caps, `${label}[${rowStart}:${rowStart + n}]`, bufferBytes(n));
      buffers.push(store);
      for (let r = rowStart; r < rowStart + n; r += chunkRows) {
        const m = Math.min(chunkRows, rowStart + n - r);
        const pieces: Uint8Array[] = [];
        for (const sp of spans) {
          const from = Math.max(r, sp.first);
          const to = Math.min(r + m, sp.first + sp.count);
          if (from < to) pieces.push(await source.read(sp.t.offset + (from - sp.first) * rawRowBytes, (to - from) * rawRowBytes));
        }
        const raw = pieces.length === 1 ? pieces[0] : concatBytes(pieces);
        const packed = kernels.repack(type, raw, m, cols);
        writeWeights(ctx.device, store, (r - rowStart) * gpuRowBytes, packed);
        progress(m * rawRowBytes);
      }
      shards.push({ store, rowStart, rows: n });
    }
    return { name: label, type, rows, cols, shards, bytes: rows * gpuRowBytes };
  };

  /**
   * Stack the matrices into one when their types agree; otherwise keep them apart (same output layout).
   * Biases (one per matrix, in the same order) are stacked the same way, so each product adds its own rows'.
   */
  const stacked = async (names: string[], biases?: string[]): Promise<WeightMatrix[]> => {
    const types = new Set(names.map((n) => tensor(n).type));
    if (types.size === 1) {
      const m = await matrix(...names);
      return [biases ? { ...m, bias: await vector(...biases) } : m];
    }
    const out: WeightMatrix[] = [];
    for (let i = 0; i < names.length; i++) {
      const m = await matrix(names[i]);
      out.push(biases ? { ...m, bias: await vector(biases[i]) } : m);
    }
    return out;
  };

  const embedding = await matrix('token_embd.weight');
  const outputNorm = await vector('output_norm.weight');
  const output = cfg.tiedEmbeddings ? embedding : await matrix('output.weight');
  const layers: LayerWeights[] = [];
  for (let l = 0; l < cfg.nLayers; l++) {
    const b = `blk.${l}.`;
    const lt = layerTensors(b);
    layers.push({
      attnNorm: await vector(b + 'attn_norm.weight'),
      qkv: await stacked(lt.qkv, lt.qkvBias),
      qkNorm: lt.qkNorm ? await vector(...lt.qkNorm) : undefined,
      o: await matrix(b + 'attn_output.weight'),
      ffnNorm: await vector(b + 'ffn_norm.weight'),
      gateUp: await stacked(lt.gateUp),
      down: await matrix(b + 'ffn_down.weight'),
    });
  }
  const ropeFactors = hasRopeFactors ? await vector('rope_freqs.weight') : undefined;
  await ctx.device.queue.onSubmittedWorkDone();
  return { embedding, layers, outputNorm, output, ropeFactors, buffers, bytes: buffers.reduce((s, b) => s + weightStoreBytes(b), 0) };
}
