/**
 * The GGUF of a synthetic model: a real model's tensor table and metadata (llama, qwen2, qwen3, phi3 or gemma
 * architecture, gpt2 tokenizer) with seeded random weights, produced tensor by tensor and chunk by chunk so a
 * 1B model never sits in memory.
 */
import { quantize } from '../../engine/gguf/quant/index.ts';
import { GgmlType } from '../../ggml/types.ts';
import { gv, type GgufTensorSpec, type GgufWriteSpec, type GgufWriteValue } from '../../engine/gguf/write.ts';
import type { ModelPreset, RopeLlama3Scaling, SynthArchitecture } from './presets.ts';
import { Rng } from './random.ts';
import { synthesizeVocab } from './vocab.ts';

/** The type of the big matrices; q4_k_m mixes Q4_K and Q6_K as llama.cpp's Q4_K_M does (mixedType). */
export const SYNTH_TYPES = { f32: GgmlType.F32, f16: GgmlType.F16, q8_0: GgmlType.Q8_0, q4_0: GgmlType.Q4_0, q4_k_m: GgmlType.Q4_K } as const;
export type SynthType = keyof typeof SYNTH_TYPES;

/** llama.cpp's general.file_type (LLAMA_FTYPE_*) for each weight type. */
const FILE_TYPE: Record<SynthType, number> = { f32: 0, f16: 1, q4_0: 2, q8_0: 7, q4_k_m: 15 };

const K_QUANTS: ReadonlySet<GgmlType> = new Set([GgmlType.Q4_K, GgmlType.Q6_K]);

/**
 * llama.cpp's Q4_K_M (llama_tensor_get_type): Q6_K for the output head (the token embedding where it is
 * tied) and for attn_v and ffn_down in the first and last eighth of the layers and every third between,
 * Q4_K elsewhere. Most GGUF files people run are this mix, so the bench can time the K-quant kernels
 * at a real model's proportions.
 */
export function mixedType(type: SynthType, name: string, layers: number, tied: boolean): GgmlType {
  const base = SYNTH_TYPES[type];
  if (type !== 'q4_k_m') return base;
  if (name === 'output.weight' || (tied && name === 'token_embd.weight')) return GgmlType.Q6_K;
  const m = /^blk\.(\d+)\.(attn_v|ffn_down)\.weight$/.exec(name);
  if (!m) return base;
  const i = Number(m[1]);
  const eighth = Math.floor(layers / 8);
  const moreBits = i < eighth || i >= Math.floor((7 * layers) / 8) || (i - eighth) % 3 === 2;
  return moreBits ? GgmlType.Q6_K : base;
}

/** Small enough that activations stay finite through every layer (as in trained models' init). */
export const WEIGHT_STD = 0.02;
/** Values per generated chunk: bounds memory at ~16 MB of f32 whatever the tensor size. */
const CHUNK_ELEMENTS = 1 << 22;

type Init = { kind: 'normal'; std: number } | { kind: 'norm'; jitter: number } | { kind: 'rope_freqs' };
interface SynthTensor extends GgufTensorSpec {
  init: Init;
}

/** What each architecture's converter writes beyond the shared keys, and how its blocks differ in tensors. */
interface ArchLayout {
  /** attention.key_length / value_length (llama always; others when the checkpoint has head_dim). */
  headSize: boolean;
  /** rope.dimension_count. */
  ropeDims: boolean;
  vocabSize: boolean;
  qkvBias: boolean;
  qkNorm: boolean;
  fusedQkv: boolean;
  fusedGateUp: boolean;
}

const PLAIN = { headSize: false, ropeDims: false, vocabSize: false, qkvBias: false, qkNorm: false, fusedQkv: false, fusedGateUp: false };
const ARCH_LAYOUT: Record<SynthArchitecture, ArchLayout> = {
  llama: { ...PLAIN, headSize: true, ropeDims: true, vocabSize: true },
  qwen2: { ...PLAIN, qkvBias: true },
  qwen3: { ...PLAIN, headSize: true, qkNorm: true },
  phi3: { ...PLAIN, ropeDims: true, fusedQkv: true, fusedGateUp: true },
  gemma: { ...PLAIN, headSize: true },
};

export interface SynthModel {
  spec: GgufWriteSpec;
  /** Each tensor's bytes in chunks, in table order; pass to writeGguf. */
  tensorData: (tensor: GgufTensorSpec, index: number) => Iterable<Uint8Array>;
}

export function synthModel(preset: ModelPreset, type: SynthType, seed: number, presetName = preset.displayName): SynthModel {
  const weightType = SYNTH_TYPES[type];
  if (weightType === undefined) throw new Error(`unknown weight type "${type}" (have: ${Object.keys(SYNTH_TYPES).join(', ')})`);
  const tensors = tensorTable(preset, type);
  const metadata = modelMetadata(preset, type, seed, presetName);
  return {
    spec: { version: 3, metadata, tensors },
    tensorData: (_t, i) => tensorChunks(tensors[i], preset, seed),
  };
}

/** llama.cpp's tensor names and GGML shapes ([in, out] for matrices); norms, biases and rope factors stay F32 as in real files. */
function tensorTable(p: ModelPreset, w: SynthType): SynthTensor[] {
  const arch = p.architecture ?? 'llama';
  const a = ARCH_LAYOUT[arch];
  if (arch === 'gemma' && !p.tiedEmbeddings) throw new Error('gemma: the output is always the token embedding (tiedEmbeddings: true)');
  const qDim = p.heads * p.headDim;
  const kvDim = p.kvHeads * p.headDim;
  const std = p.init?.matrixStd ?? WEIGHT_STD;
  const jitter = p.init?.normJitter ?? 0;
  const matrix = (name: string, dims: number[], s = std): SynthTensor => {
    const type = mixedType(w, name, p.layers, p.tiedEmbeddings);
    if (K_QUANTS.has(type) && dims[0] % 256 !== 0) throw new Error(`${name}: rows of ${dims[0]} values are no whole number of K-quant blocks (256): this preset cannot be ${w}`);
    return { name, dims, type, init: { kind: 'normal', std: s } };
  };
  const norm = (name: string, dims: number[]): SynthTensor => ({ name, dims, type: GgmlType.F32, init: { kind: 'norm', jitter } });
  const bias = (name: string, dims: number[]): SynthTensor => ({ name, dims, type: GgmlType.F32, init: { kind: 'normal', std: p.init?.biasStd ?? std } });
  const t: SynthTensor[] = [matrix('token_embd.weight', [p.dim, p.vocab], p.init?.embeddingStd ?? std)];
  if (p.ropeScaling) t.push({ name: 'rope_freqs.weight', dims: [p.headDim / 2], type: GgmlType.F32, init: { kind: 'rope_freqs' } });
  for (let l = 0; l < p.layers; l++) {
    const b = `blk.${l}`;
    t.push(norm(`${b}.attn_norm.weight`, [p.dim]));
    const qkv: [string, number][] = a.fusedQkv ? [['attn_qkv', qDim + 2 * kvDim]] : [['attn_q', qDim], ['attn_k', kvDim], ['attn_v', kvDim]];
    for (const [n, rows] of qkv) t.push(matrix(`${b}.${n}.weight`, [p.dim, rows]));
    if (a.qkvBias) for (const [n, rows] of qkv) t.push(bias(`${b}.${n}.bias`, [rows]));
    if (a.qkNorm) t.push(norm(`${b}.attn_q_norm.weight`, [p.headDim]), norm(`${b}.attn_k_norm.weight`, [p.headDim]));
    t.push(matrix(`${b}.attn_output.weight`, [qDim, p.dim]), norm(`${b}.ffn_norm.weight`, [p.dim]));
    if (a.fusedGateUp) t.push(matrix(`${b}.ffn_up.weight`, [p.dim, 2 * p.ffn]));
    else t.push(matrix(`${b}.ffn_gate.weight`, [p.dim, p.ffn]), matrix(`${b}.ffn_up.weight`, [p.dim, p.ffn]));
    t.push(matrix(`${b}.ffn_down.weight`, [p.ffn, p.dim]));
  }
  t.push(norm('output_norm.weight', [p.dim]));
  if (!p.tiedEmbeddings) t.push(matrix('output.weight', [p.dim, p.vocab], p.init?.outputStd ?? std));
  return t;
}

function modelMetadata(p: ModelPreset, type: SynthType, seed: number, presetName: string): [string, GgufWriteValue][] {
  const tok = p.tokenizer;
  const vocab = synthesizeVocab(p.vocab, tok.specials, tok.specialsAt);
  const id = (text: string) => {
    const i = vocab.tokens.indexOf(text);
    if (i < 0) throw new Error(`special token ${text} is not in the vocabulary`);
    return gv.u32(i);
  };
  const arch = p.architecture ?? 'llama';
  const a = ARCH_LAYOUT[arch];
  const k = (key: string) => `${arch}.${key}`;
  const m: [string, GgufWriteValue][] = [
    ['general.architecture', arch],
    ['general.type', 'model'],
    ['general.name', `${p.displayName} (synthetic random weights)`],
    ['general.file_type', gv.u32(FILE_TYPE[type])],
    ['general.quantization_version', gv.u32(2)],
    ['svc.synth.preset', presetName],
    ['svc.synth.seed', gv.u32(seed)],
    [k('block_count'), gv.u32(p.layers)],
    [k('context_length'), gv.u32(p.contextLength)],
    [k('embedding_length'), gv.u32(p.dim)],
    [k('feed_forward_length'), gv.u32(p.ffn)],
    [k('attention.head_count'), gv.u32(p.heads)],
    [k('attention.head_count_kv'), gv.u32(p.kvHeads)],
  ];
  if (a.headSize) m.push([k('attention.key_length'), gv.u32(p.headDim)], [k('attention.value_length'), gv.u32(p.headDim)]);
  m.push([k('rope.freq_base'), gv.f32(p.ropeBase)]);
  if (a.ropeDims) m.push([k('rope.dimension_count'), gv.u32(p.ropeDims ?? p.headDim)]);
  m.push([k('attention.layer_norm_rms_epsilon'), gv.f32(p.rmsEps)]);
  if (a.vocabSize) m.push([k('vocab_size'), gv.u32(p.vocab)]);
  // Phi-3's converter also records the pre-extension context and the sliding window (0: none, as Phi-4-mini).
  if (arch === 'phi3') m.push([k('rope.scaling.original_context_length'), gv.u32(p.contextLength)], [k('attention.sliding_window'), gv.u32(0)]);
  m.push(
    ['tokenizer.ggml.model', 'gpt2'],
    ['tokenizer.ggml.pre', tok.pre],
    ['tokenizer.ggml.tokens', vocab.tokens],
    ['tokenizer.ggml.token_type', vocab.types],
    ['tokenizer.ggml.merges', vocab.merges],
    ['tokenizer.ggml.bos_token_id', id(tok.bos)],
    ['tokenizer.ggml.eos_token_id', id(tok.eos)],
    ['tokenizer.ggml.add_bos_token', tok.addBos],
  );
  if (tok.pad) m.push(['tokenizer.ggml.padding_token_id', id(tok.pad)]);
  if (tok.chatTemplate) m.push(['tokenizer.chat_template', tok.chatTemplate]);
  return m;
}

/** Llama 3's per-frequency RoPE factors, computed as llama.cpp's converter does for rope_type "llama3". */
export function llama3RopeFactors(headDim: number, base: number, s: RopeLlama3Scaling): Float32Array {
  const lowWavelen = s.originalContextLength / s.lowFreqFactor;
  const highWavelen = s.originalContextLength / s.highFreqFactor;
  const out = new Float32Array(headDim / 2);
  for (let i = 0; i < out.length; i++) {
    const freq = 1 / base ** ((2 * i) / headDim);
    const wavelen = (2 * Math.PI) / freq;
    if (wavelen < highWavelen) out[i] = 1;
    else if (wavelen > lowWavelen) out[i] = s.factor;
    else {
      const smooth = (s.originalContextLength / wavelen - s.lowFreqFactor) / (s.highFreqFactor - s.lowFreqFactor);
      out[i] = 1 / ((1 - smooth) / s.factor + smooth);
    }
  }
  return out;
}

function* tensorChunks(t: SynthTensor, p: ModelPreset, seed: number): Iterable<Uint8Array> {
  const elements = t.dims.reduce((a, b) => a * b, 1);
  const init = t.init;
  if (init.kind === 'rope_freqs') return yield quantize(t.type, llama3RopeFactors(p.headDim, p.ropeBase, p.ropeScaling!));
  if (init.kind === 'norm') {
    const v = new Float32Array(elements).fill(1);
    if (init.jitter > 0) {
      const noise = new Float32Array(elements);
      new Rng(seed, t.name).fillNormal(noise, init.jitter);
      for (let i = 0; i < elements; i++) v[i] += noise[i];
    }
    return yield quantize(t.type, v);
  }
  // Whole rows per chunk, so quantization blocks (which never span rows) stay whole.
  const row = t.dims[0];
  const rowsPerChunk = Math.max(1, Math.floor(CHUNK_ELEMENTS / row));
  const rng = new Rng(seed, t.name);
  const buf = new Float32Array(Math.min(elements, rowsPerChunk * row));
  for (let done = 0; done < elements; done += buf.length) {
    const chunk = buf.length <= elements - done ? buf : buf.subarray(0, elements - done);
    rng.fillNormal(chunk, init.std);
    yield quantize(t.type, chunk);
  }
}
