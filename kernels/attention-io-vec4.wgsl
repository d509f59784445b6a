// The activations and KV cache as vec4 arrays (attention-serial-vec4.wgsl, attention-serial-grouped.wgsl):
// a CPU rasteriser runs each storage load as a loop over its SIMD lanes, so one vec4 load costs about
// what one f32 load does. The output is written by store_head: f32 here (attention-out-f32.wgsl), or
// quantized for the O product (attention-out-q8.wgsl).
@group(0) @binding(0) var<storage, read> q: array<vec4f>;
@group(0) @binding(1) var<storage, read> k_cache: array<vec4f>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4f>;
