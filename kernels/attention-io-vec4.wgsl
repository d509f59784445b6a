// The activations and KV cache as vec4 arrays (attention-serial-grouped.wgsl, attention-serial-split.wgsl):
// a CPU rasteriser runs each storage load as a loop over its SIMD lanes, so one vec4 load costs about
// what one f32 load does. The output is written by store_head: f32 here (attention-out-f32.wgsl), or
// quantized for the O product (attention-out-q8.wgsl).
@group(0) @binding(0) var<storage, read> q: array<vec4f>;
// k_cache and v_cache (bindings 1, 2) with k_pair(), v_pair(), k_one() and v_one() come from
// attention-kv-f32.wgsl or attention-kv-f16.wgsl, by the cache's format.

// Invocations a workgroup (AttentionKernel sets it).
override WG: u32 = 8u;

const MAX_HEAD_VEC: u32 = MAX_HEAD_DIM / 4u;
// head_dim / 4, fixed per pipeline: loops over a head with a constant trip count are unrolled by the
// shader compiler and their arrays kept in registers (28% less time at 400 positions on llvmpipe).
override HV: u32 = 16u;
