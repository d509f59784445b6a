/** The model's weights on the GPU, by role. Matrices stay packed; norm vectors are f32. */
import type { WeightMatrix } from './matrix.ts';

export interface LayerWeights {
  attnNorm: GPUBuffer;
  q: WeightMatrix;
  k: WeightMatrix;
  v: WeightMatrix;
  o: WeightMatrix;
  ffnNorm: GPUBuffer;
  gate: WeightMatrix;
  up: WeightMatrix;
  down: WeightMatrix;
}

export interface ModelWeights {
  embedding: WeightMatrix;
  layers: LayerWeights[];
  outputNorm: GPUBuffer;
  /** The embedding itself when tied. */
  output: WeightMatrix;
  /** Per-pair RoPE frequency divisors (`rope_freqs.weight`), if the model has them. */
  ropeFactors: GPUBuffer | undefined;
  /** Every buffer, for destroy() and memory accounting. */
  buffers: GPUBuffer[];
  bytes: number;
}
