/**
 * An architecture is a set of differences from the llama baseline: how to read its hyperparameters from
 * GGUF metadata and which optional pieces its transformer block has. Adding `qwen2`, `qwen3`, `phi3`
 * or `gemma` means adding one file here that fills in these fields, not a new forward pass.
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
  /** Multiply embeddings by this (gemma: sqrt(dim)); 1 for llama. */
  embedScale: number;
}

export interface BlockVariant {
  /** Q/K/V projections have biases (qwen2). */
  qkvBias: boolean;
  /** Per-head RMSNorm on Q and K before RoPE (qwen3). */
  qkNorm: boolean;
  /** Q, K and V come from one fused `attn_qkv` matrix (phi3). */
  fusedQkv: boolean;
  /** Gate and up come from one fused `ffn_up` matrix of twice the width (phi3). */
  fusedGateUp: boolean;
  /** Norm weights are stored as w - 1 (gemma). */
  normWeightPlusOne: boolean;
  /** Feed-forward activation. */
  activation: 'silu' | 'gelu';
}

export const LLAMA_BLOCK: BlockVariant = {
  qkvBias: false,
  qkNorm: false,
  fusedQkv: false,
  fusedGateUp: false,
  normWeightPlusOne: false,
  activation: 'silu',
};

export interface Architecture {
  name: string;
  /** Read hyperparameters from `<arch>.*` metadata; throw a clear error naming a missing key. */
  config(meta: GgufMetadata, tensorNames: ReadonlySet<string>): ModelConfig;
}
