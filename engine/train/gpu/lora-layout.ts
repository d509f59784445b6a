/**
 * Where each adapted matrix's A and B sit in the trainer's one parameter buffer (gradients and both AdamW
 * moments use the same layout), and their initial values. One buffer for all of them lets the gradient
 * norm, clipping and AdamW run as one dispatch each, whatever the number of matrices.
 */
import type { ModelConfig } from '../../arch/types.ts';
import { LORA_TARGETS, type LoraTarget } from '../../lora/adapter-file.ts';
import type { LoraShape } from '../types.ts';
import { targetShape } from './base-weights.ts';

export interface LoraSlot {
  layer: number;
  target: LoraTarget;
  inDim: number;
  outDim: number;
  /** Element offsets of A (rank × in, row-major) and B (out × rank). */
  aOffset: number;
  bOffset: number;
}

export interface LoraLayout {
  rank: number;
  scale: number;
  slots: LoraSlot[];
  /** slot of (layer, target), or undefined when that matrix is not adapted. */
  find(layer: number, target: LoraTarget): LoraSlot | undefined;
  parameterCount: number;
}

export function checkShape(shape: LoraShape): void {
  if (!Number.isInteger(shape.rank) || shape.rank < 1) throw new Error(`LoRA rank must be a positive integer, got ${shape.rank}`);
  if (!Number.isFinite(shape.alpha) || shape.alpha <= 0) throw new Error(`LoRA alpha must be a positive number, got ${shape.alpha}`);
  if (shape.targets.length === 0) throw new Error('LoRA targets are empty: name at least one of ' + LORA_TARGETS.join(', '));
  const seen = new Set<string>();
  for (const t of shape.targets) {
    if (!(LORA_TARGETS as readonly string[]).includes(t)) throw new Error(`unknown LoRA target "${t}" (known: ${LORA_TARGETS.join(', ')})`);
    if (seen.has(t)) throw new Error(`LoRA target "${t}" is listed twice`);
    seen.add(t);
  }
}

export function loraLayout(cfg: ModelConfig, shape: LoraShape): LoraLayout {
  checkShape(shape);
  // Slots in a fixed order (layer, then LORA_TARGETS order) so saved states do not depend on how the
  // targets were listed.
  const targets = LORA_TARGETS.filter((t) => shape.targets.includes(t));
  const slots: LoraSlot[] = [];
  const byKey = new Map<string, LoraSlot>();
  let at = 0;
  for (let layer = 0; layer < cfg.nLayers; layer++) {
    for (const target of targets) {
      const { inDim, outDim } = targetShape(cfg, target);
      const slot = { layer, target, inDim, outDim, aOffset: at, bOffset: at + shape.rank * inDim };
      at += shape.rank * (inDim + outDim);
      slots.push(slot);
      byKey.set(`${layer}.${target}`, slot);
    }
  }
  return { rank: shape.rank, scale: shape.alpha / shape.rank, slots, find: (l, t) => byKey.get(`${l}.${t}`), parameterCount: at };
}

/**
 * PEFT's initialisation: A from kaiming_uniform_(a = √5), i.e. uniform in ±1/√in, and B = 0, so the
 * untrained adapter leaves the base model exactly as it is. Deterministic in `seed`.
 */
export function initialParameters(layout: LoraLayout, seed: number): Float32Array {
  const p = new Float32Array(layout.parameterCount);
  const next = mulberry32(seed);
  for (const s of layout.slots) {
    const bound = 1 / Math.sqrt(s.inDim);
    for (let i = 0; i < layout.rank * s.inDim; i++) p[s.aOffset + i] = (next() * 2 - 1) * bound;
  }
  return p;
}

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
