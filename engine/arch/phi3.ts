/**
 * Phi-3 and Phi-4-mini (`phi3`): llama with Q, K and V in one fused `attn_qkv.weight`, gate and up in
 * one `ffn_up.weight` of 2 × feed_forward_length rows (gate first), NeoX RoPE, and partial rotary when
 * `phi3.rope.dimension_count` is below the head size (Phi-4-mini rotates 96 of 128).
 * Not supported: the LongRoPE factors of the 128k-context variants (llama.cpp switches between two
 * factor sets by context length); such files are refused rather than run with the wrong positions.
 */
import { readLlamaLikeConfig } from './llama.ts';
import { LLAMA_BLOCK, type Architecture } from './types.ts';

const LONG_ROPE = ['rope_factors_long.weight', 'rope_factors_short.weight'];

export const phi3: Architecture = {
  name: 'phi3',
  config(meta, tensorNames) {
    const longRope = LONG_ROPE.find((n) => tensorNames.has(n));
    if (longRope) throw new Error(`phi3: tensor "${longRope}" (LongRoPE, 128k-context variants) is not supported`);
    return readLlamaLikeConfig(meta, tensorNames, 'phi3', { ...LLAMA_BLOCK, fusedQkv: true, fusedGateUp: true }, true);
  },
};
