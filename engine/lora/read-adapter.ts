/**
 * Reads a llama.cpp GGUF LoRA adapter (see adapter-file.ts for the format) and checks it against the
 * base model it is to run on, before anything reaches the GPU: every violation is an EngineInputError
 * that names the file and the tensor at fault. Tensors may be F32, F16, BF16 or Q8_0 (anything with a
 * CPU codec); they become F32.
 */
import type { ModelConfig } from '../arch/types.ts';
import { GgufError, parseGguf, type GgufFile, type GgufTensorInfo } from '../gguf/parse.ts';
import { dequantize, QUANT_TYPES } from '../gguf/quant/index.ts';
import type { ModelSource } from '../loader/source.ts';
import { EngineInputError } from '../types.ts';
import { typeName } from '../../ggml/types.ts';
import { LORA_TARGET_TENSORS, LORA_TARGETS, type LoraMatrix, type LoraTarget } from './adapter-file.ts';
import { loraTargetShape, loraUnsupportedReason, MAX_LORA_RANK } from './targets.ts';

/** Default ceiling on one adapter's weights as F32 (a rank-64 adapter of all targets of an 8B model is ~670 MiB). */
export const DEFAULT_MAX_ADAPTER_BYTES = 1 << 30;

export interface LoraAdapterData {
  /** general.name, if the file has one. */
  name: string | undefined;
  architecture: string;
  alpha: number;
  /** The largest rank among its matrices (one rank throughout, in adapters this project writes). */
  rank: number;
  targets: LoraTarget[];
  /** Distinct layers with at least one adapted matrix. */
  layers: number;
  matrices: LoraMatrix[];
  /** F32 bytes of all A and B matrices. */
  bytes: number;
}

const STEM_TARGET = new Map<string, LoraTarget>(LORA_TARGETS.map((t) => [LORA_TARGET_TENSORS[t], t]));
const LORA_NAME = /^blk\.(\d+)\.([a-z0-9_]+)\.weight\.lora_([ab])$/;

export async function readLoraAdapter(source: ModelSource, base: ModelConfig, opts: { maxBytes?: number } = {}): Promise<LoraAdapterData> {
  const name = source.name;
  const fail = (msg: string) => new EngineInputError(`LoRA adapter ${name}: ${msg}`, 'adapter');
  const unsupported = loraUnsupportedReason(base);
  if (unsupported) throw fail(unsupported);
  let gguf: GgufFile;
  try {
    gguf = await parseGguf(source);
  } catch (e) {
    if (e instanceof GgufError) throw fail(e.message);
    throw e;
  }
  const meta = gguf.metadata;
  const type = meta.optionalString('general.type');
  if (type !== 'adapter') throw fail(`not an adapter file (general.type is ${type === undefined ? 'missing' : `"${type}"`}, expected "adapter")`);
  const adapterType = meta.optionalString('adapter.type');
  if (adapterType !== 'lora') throw fail(`adapter.type is ${adapterType === undefined ? 'missing' : `"${adapterType}"`}; only "lora" adapters are supported`);
  const arch = meta.optionalString('general.architecture');
  if (arch !== base.architecture) throw fail(`made for architecture ${arch === undefined ? '(none given)' : `"${arch}"`}, but the model is "${base.architecture}"`);
  // llama.cpp reads a missing alpha as 0, which means "scale as given" (no alpha / rank factor).
  const alpha = meta.optionalNumber('adapter.lora.alpha') ?? 0;
  if (!Number.isFinite(alpha) || alpha < 0) throw fail(`adapter.lora.alpha is ${alpha}; it must be a finite number ≥ 0`);

  const pairs = new Map<string, { layer: number; target: LoraTarget; a?: GgufTensorInfo; b?: GgufTensorInfo }>();
  for (const t of gguf.tensors) {
    const m = LORA_NAME.exec(t.name);
    if (!m) throw fail(`tensor "${t.name}" is not a LoRA tensor of a block matrix (expected blk.<layer>.<matrix>.weight.lora_a / lora_b)`);
    const layer = Number(m[1]);
    const target = STEM_TARGET.get(m[2]);
    if (!target) throw fail(`tensor "${t.name}" adapts ${m[2]}, which is not a supported target (supported: ${LORA_TARGETS.map((x) => LORA_TARGET_TENSORS[x]).join(', ')})`);
    if (layer >= base.nLayers) throw fail(`tensor "${t.name}" is for layer ${layer}, but the model has ${base.nLayers} layers`);
    if (!QUANT_TYPES.includes(t.type)) throw fail(`tensor "${t.name}" has type ${typeName(t.type)}, which cannot be read (supported: ${QUANT_TYPES.map(typeName).join(', ')})`);
    const key = `blk.${layer}.${m[2]}`;
    const p = pairs.get(key) ?? { layer, target };
    p[m[3] as 'a' | 'b'] = t;
    pairs.set(key, p);
  }
  if (pairs.size === 0) throw fail('holds no LoRA tensors');

  let bytes = 0;
  const planned: { layer: number; target: LoraTarget; a: GgufTensorInfo; b: GgufTensorInfo; inDim: number; outDim: number; rank: number }[] = [];
  for (const [key, p] of pairs) {
    if (!p.a) throw fail(`${key}.weight.lora_b has no matching ${key}.weight.lora_a`);
    if (!p.b) throw fail(`${key}.weight.lora_a has no matching ${key}.weight.lora_b`);
    const { inDim, outDim } = loraTargetShape(base, p.target);
    const [aIn, rank, ...aRest] = p.a.dims;
    const [bRank, bOut, ...bRest] = p.b.dims;
    if (aRest.some((d) => d !== 1) || rank === undefined) throw fail(`tensor "${p.a.name}" has shape [${p.a.dims.join(', ')}]; expected [${inDim}, rank]`);
    if (bRest.some((d) => d !== 1) || bOut === undefined) throw fail(`tensor "${p.b.name}" has shape [${p.b.dims.join(', ')}]; expected [rank, ${outDim}]`);
    if (aIn !== inDim) {
      const hint = rank === inDim ? ' (lora_a looks transposed)' : '';
      throw fail(`tensor "${p.a.name}" has shape [${p.a.dims.join(', ')}]; the base matrix takes ${inDim} inputs, so expected [${inDim}, rank]${hint}`);
    }
    if (bOut !== outDim) throw fail(`tensor "${p.b.name}" has shape [${p.b.dims.join(', ')}]; the base matrix has ${outDim} outputs, so expected [rank, ${outDim}]`);
    if (rank !== bRank) throw fail(`tensor "${p.a.name}" has rank ${rank} but "${p.b.name}" has rank ${bRank}`);
    if (rank < 1 || rank > MAX_LORA_RANK) throw fail(`tensor "${p.a.name}" has rank ${rank}; ranks 1..${MAX_LORA_RANK} are supported`);
    bytes += 4 * rank * (inDim + outDim);
    planned.push({ layer: p.layer, target: p.target, a: p.a, b: p.b, inDim, outDim, rank });
  }
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_ADAPTER_BYTES;
  if (bytes > maxBytes) throw fail(`needs ${bytes} bytes of weights as F32, more than the ${maxBytes} allowed per adapter`);

  const read = async (t: GgufTensorInfo): Promise<Float32Array> => {
    const values = dequantize(t.type, await source.read(t.offset, t.byteSize), t.elements);
    for (let i = 0; i < values.length; i++) if (!Number.isFinite(values[i])) throw fail(`tensor "${t.name}" holds a non-finite value (${values[i]}) at element ${i}`);
    return values;
  };
  const matrices: LoraMatrix[] = [];
  planned.sort((x, y) => x.layer - y.layer || LORA_TARGETS.indexOf(x.target) - LORA_TARGETS.indexOf(y.target));
  for (const p of planned) matrices.push({ layer: p.layer, target: p.target, inDim: p.inDim, outDim: p.outDim, rank: p.rank, a: await read(p.a), b: await read(p.b) });
  return {
    name: meta.optionalString('general.name'),
    architecture: arch,
    alpha,
    rank: Math.max(...matrices.map((m) => m.rank)),
    targets: LORA_TARGETS.filter((t) => matrices.some((m) => m.target === t)),
    layers: new Set(matrices.map((m) => m.layer)).size,
    matrices,
    bytes,
  };
}
