// The KV cache in its 'f32' format (kv-format.ts) for the vec4 attention kernels, which walk a head two
// vec4s at a time: k_pair(b, d) / v_pair(b, d) are vec4s d and d + 1 of the head whose first vec4 is b,
// k_one / v_one vec4 d alone (the last of a head of an odd number of vec4s).
@group(0) @binding(1) var<storage, read> k_cache: array<vec4f>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4f>;

fn k_pair(b: u32, d: u32) -> mat2x4f {
  return mat2x4f(k_cache[b + d], k_cache[b + d + 1u]);
}

fn v_pair(b: u32, d: u32) -> mat2x4f {
  return mat2x4f(v_cache[b + d], v_cache[b + d + 1u]);
}

fn k_one(b: u32, d: u32) -> vec4f {
  return k_cache[b + d];
}

fn v_one(b: u32, d: u32) -> vec4f {
  return v_cache[b + d];
}
