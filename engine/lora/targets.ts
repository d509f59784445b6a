/**
 * Which base matrices an adapter may target on a model, and their shapes: the one place that knows how
 * the short target names map onto the forward pass's matrices.
 */
import type { ModelConfig } from '../arch/types.ts';
import { LORA_TARGETS, type LoraTarget } from './adapter-file.ts';

/** Highest rank an adapter matrix may have: far above useful ranks, low enough to bound the scratch rows. */
export const MAX_LORA_RANK = 512;

/** Index of each target in the GPU directory (LORA_TARGETS order). */
export const TARGET_INDEX: Readonly<Record<LoraTarget, number>> = Object.fromEntries(LORA_TARGETS.map((t, i) => [t, i])) as Record<LoraTarget, number>;

/** W of the target is out × in: the adapter's A is rank × in and B is out × rank. */
export function loraTargetShape(cfg: ModelConfig, target: LoraTarget): { inDim: number; outDim: number } {
  const qDim = cfg.nHeads * cfg.headDim;
  const kvDim = cfg.nKvHeads * cfg.headDim;
  switch (target) {
    case 'q':
      return { inDim: cfg.dim, outDim: qDim };
    case 'k':
    case 'v':
      return { inDim: cfg.dim, outDim: kvDim };
    case 'o':
      return { inDim: qDim, outDim: cfg.dim };
    case 'gate':
    case 'up':
      return { inDim: cfg.dim, outDim: cfg.ffnDim };
    case 'down':
      return { inDim: cfg.ffnDim, outDim: cfg.dim };
  }
}

/**
 * Why adapters cannot run on this model, or undefined when they can. Architectures that fuse Q/K/V or
 * gate/up into one tensor (phi3) name their LoRA tensors after the fused matrix, which no target covers.
 */
export function loraUnsupportedReason(cfg: ModelConfig): string | undefined {
  if (cfg.block.fusedQkv) return `architecture ${cfg.architecture} stores Q, K and V as one fused attn_qkv matrix, which LoRA adapters here cannot target`;
  if (cfg.block.fusedGateUp) return `architecture ${cfg.architecture} stores gate and up as one fused ffn_up matrix, which LoRA adapters here cannot target`;
  return undefined;
}
