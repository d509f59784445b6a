/**
 * The llama family (Llama 2/3, TinyLlama, SmolLM, TinyStories): RMSNorm, RoPE in adjacent-pair order
 * (llama.cpp's converter permutes Q/K for it), grouped-query attention, SwiGLU, tied or separate output.
 */
import type { GgufMetadata } from '../gguf/parse.ts';
import { LLAMA_BLOCK, type Architecture, type BlockVariant, type ModelConfig } from './types.ts';

/** Hyperparameters every llama-like architecture stores the same way under `<arch>.`. */
export function readLlamaLikeConfig(meta: GgufMetadata, tensorNames: ReadonlySet<string>, arch: string, block: BlockVariant, neox: boolean): ModelConfig {
  const k = (name: string) => `${arch}.${name}`;
  const dim = meta.number(k('embedding_length'));
  const nHeads = meta.number(k('attention.head_count'));
  const nKvHeads = meta.number(k('attention.head_count_kv'), nHeads);
  // Heads may be wider than dim / heads (Qwen3-0.6B: 16 heads of 128 on dim 1024): key_length says so.
  const headDim = meta.number(k('attention.key_length'), dim / nHeads);
  const valueDim = meta.number(k('attention.value_length'), headDim);
  const nRot = meta.number(k('rope.dimension_count'), headDim);
  const tokens = meta.optionalArray('tokenizer.ggml.tokens');
  const vocabSize = meta.number(k('vocab_size'), tokens ? tokens.length : 0);
  if (!Number.isInteger(headDim) || headDim <= 0) throw new Error(`${arch}: embedding_length ${dim} is not divisible by head_count ${nHeads} (and no ${k('attention.key_length')})`);
  if (valueDim !== headDim) throw new Error(`${arch}: ${k('attention.value_length')} ${valueDim} differs from key_length ${headDim}, which this engine does not support`);
  if (!(nRot > 0 && nRot <= headDim && nRot % 2 === 0)) throw new Error(`${arch}: ${k('rope.dimension_count')} ${nRot} must be even and at most the head size ${headDim}`);
  if (nHeads % nKvHeads !== 0) throw new Error(`${arch}: head_count ${nHeads} is not a multiple of head_count_kv ${nKvHeads}`);
  if (vocabSize <= 0) throw new Error(`${arch}: vocabulary size unknown (no ${k('vocab_size')} and no tokenizer.ggml.tokens)`);
  const scalingType = meta.optionalString(k('rope.scaling.type'));
  const scalingFactor = meta.number(k('rope.scaling.factor'), 1);
  return {
    architecture: arch,
    nLayers: meta.number(k('block_count')),
    dim,
    nHeads,
    nKvHeads,
    headDim,
    ffnDim: meta.number(k('feed_forward_length')),
    vocabSize,
    contextLength: meta.number(k('context_length')),
    rmsEps: meta.number(k('attention.layer_norm_rms_epsilon'), 1e-5),
    rope: {
      base: meta.number(k('rope.freq_base'), 10000),
      freqScale: scalingType === 'linear' && scalingFactor > 0 ? 1 / scalingFactor : 1,
      nRot,
      neox,
    },
    tiedEmbeddings: !tensorNames.has('output.weight'),
    block,
    embedScale: 1,
  };
}

export const llama: Architecture = {
  name: 'llama',
  config: (meta, tensorNames) => readLlamaLikeConfig(meta, tensorNames, 'llama', LLAMA_BLOCK, false),
};
