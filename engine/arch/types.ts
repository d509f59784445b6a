/**
 * An architecture is a set of differences from the llama baseline: how to read its hyperparameters from
 * GGUF metadata and which optional pieces its transformer block has. `qwen2.ts`, `qwen3.ts`, `phi3.ts`
 * and `gemma.ts` are such files: each fills in these fields, and the one forward pass (engine/model/)
 * runs them all. A new variant is a flag here, the tensors it needs in load-weights.ts, and its kernel
 * option in transformer.ts.
 */
import type { GgufMetadata } from '../gguf/parse.ts';

export interface ModelConfig {
  architecture: string;
  nLayers: number;
  dim: number;
  nHeads: number;
  nKvHeads: number;
  headDim: number;
  ffnDim: number;
  vocabSize: number;
  /** Context the model was trained for (the engine may run with less). */
  contextLength: number;
  rmsEps: number;
  rope: {
    base: number;
    /** Multiplies positions: 1 / linear scaling factor. */
    freqScale: number;
    /** Rotated dimensions per head. */
    nRot: number;
    /** NeoX order rotates (i, i + n/2) instead of adjacent pairs. */
    neox: boolean;
  };
  /** Output head shares the token embedding. */
  tiedEmbeddings: boolean;
  /** Differences from the llama block, each off for llama itself. */
  block: BlockVariant;
  /** Multiply embeddings by this (gemma: sqrt(dim)); 1 for llama. Applied in the embedding lookup. */
  embedScale: number;
}

export interface BlockVariant {
  /** Q/K/V projections have biases (qwen2), added inside the projection's product. */
  qkvBias: boolean;
  /** Per-head RMSNorm on Q and K before RoPE, weights `attn_q_norm` / `attn_k_norm` of head_dim (qwen3). */
  qkNorm: boolean;
  /** Q, K and V come from one fused `attn_qkv` matrix (phi3). */
  fusedQkv: boolean;
  /** Gate and up come from one fused `ffn_up` matrix of twice the width, gate rows first (phi3). */
  fusedGateUp: boolean;
  /**
   * Feed-forward activation applied to the gate: silu (SwiGLU) or GELU's tanh approximation (GeGLU).
   * (Gemma's norms need no flag: its checkpoints store norm weights as w - 1, but llama.cpp's converter
   * adds the 1 back when writing GGUF, so GGUF norm weights are used as they are, as llama.cpp does.)
   */
  activation: 'silu' | 'gelu';
}

export const LLAMA_BLOCK: BlockVariant = {
  qkvBias: false,
  qkNorm: false,
  fusedQkv: false,
  fusedGateUp: false,
  activation: 'silu',
};

export interface Architecture {
  name: string;
  /** Read hyperparameters from `<arch>.*` metadata; throw a clear error naming a missing key. */
  config(meta: GgufMetadata, tensorNames: ReadonlySet<string>): ModelConfig;
}
