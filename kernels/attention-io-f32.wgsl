// The activations and KV cache as f32 arrays (attention.wgsl, attention-serial.wgsl).
@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k_cache: array<f32>;
@group(0) @binding(2) var<storage, read> v_cache: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;
