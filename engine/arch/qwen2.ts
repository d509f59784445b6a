/**
 * Qwen2 and Qwen2.5 (`qwen2`): llama plus biases on the Q, K and V projections (`attn_q.bias`,
 * `attn_k.bias`, `attn_v.bias`), and RoPE in NeoX order (the converter does not permute Q/K for it).
 * Output tied (0.5B–3B) or separate (7B and up): `output.weight` decides, as for llama.
 */
import { readLlamaLikeConfig } from './llama.ts';
import { LLAMA_BLOCK, type Architecture } from './types.ts';

export const qwen2: Architecture = {
  name: 'qwen2',
  config: (meta, tensorNames) => readLlamaLikeConfig(meta, tensorNames, 'qwen2', { ...LLAMA_BLOCK, qkvBias: true }, true),
};
