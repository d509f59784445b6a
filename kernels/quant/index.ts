/** GPU weight layouts: how each GGML type is stored for the kernels, and how big tensors are split. */
export { deviceLayout, GPU_WEIGHT_TYPES, gpuLayout, weightRowGroup, type GpuWeightLayout } from './layouts.ts';
export { planRowShards, type RowShard } from './shards.ts';
