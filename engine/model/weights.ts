/** The model's weights on the GPU, by role. Matrices stay packed; norm vectors are f32. */
import type { WeightMatrix } from './matrix.ts';
import type { WeightStore } from '../../kernels/runtime/weights.ts';

export interface LayerWeights {
  attnNorm: GPUBuffer;
  /**
   * Q, K and V rows stacked in one matrix when their types agree (or fused in the file), else three;
   * outputs are [q | k | v]. Biases, if any, ride on the matrices.
   */
  qkv: WeightMatrix[];
  /** Per-head norm weights [q_norm | k_norm], 2 × head_dim (qwen3), else undefined. */
  qkNorm: GPUBuffer | undefined;
  o: WeightMatrix;
  ffnNorm: GPUBuffer;
  /** Gate and up rows, stacked likewise (or fused in the file); outputs are [gate | up]. */
  gateUp: WeightMatrix[];
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
  /** Every weight store (buffers; textures for matrices on llvmpipe), for destroy() and memory accounting. */
  buffers: WeightStore[];
  bytes: number;
}
