/**
 * Gemma 1 (`gemma`): llama with embeddings scaled by sqrt(dim), a GELU-gated feed-forward (GeGLU, tanh
 * approximation), NeoX RoPE and the output always tied to the token embedding (llama.cpp ignores any
 * `output.weight`). Heads are usually wider than dim / heads (`gemma.attention.key_length` 256).
 * Norm weights: Gemma's checkpoints hold w - 1 and use (1 + w), but llama.cpp's converter writes 1 + w
 * into the GGUF, so they are used as stored, exactly like llama's.
 */
import { readLlamaLikeConfig } from './llama.ts';
import { LLAMA_BLOCK, type Architecture } from './types.ts';

export const gemma: Architecture = {
  name: 'gemma',
  config(meta, tensorNames) {
    const cfg = readLlamaLikeConfig(meta, tensorNames, 'gemma', { ...LLAMA_BLOCK, activation: 'gelu' }, true);
    // llama.cpp multiplies by sqrtf(n_embd) in f32; Math.fround keeps the same factor.
    return { ...cfg, embedScale: Math.fround(Math.sqrt(cfg.dim)), tiedEmbeddings: true };
  },
};
