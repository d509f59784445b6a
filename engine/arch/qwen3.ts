/**
 * Qwen3 dense models (`qwen3`): qwen2 without the Q/K/V biases, plus an RMSNorm over each Q and K head
 * (`attn_q_norm.weight`, `attn_k_norm.weight`, head_dim long) before RoPE. Heads may be wider than
 * dim / heads (`qwen3.attention.key_length`: 128 on Qwen3-0.6B's dim 1024); the reader takes it from there.
 */
import { readLlamaLikeConfig } from './llama.ts';
import { LLAMA_BLOCK, type Architecture } from './types.ts';

export const qwen3: Architecture = {
  name: 'qwen3',
  config: (meta, tensorNames) => readLlamaLikeConfig(meta, tensorNames, 'qwen3', { ...LLAMA_BLOCK, qkNorm: true }, true),
};
