// The KV cache in its 'f32' format (kv-format.ts) for rope-kv-store-vec4.wgsl: store_k(i, v) and
// store_v(i, v) write vec4 i of a cache buffer.
@group(0) @binding(5) var<storage, read_write> k_cache: array<vec4f>;
@group(0) @binding(6) var<storage, read_write> v_cache: array<vec4f>;

fn store_k(i: u32, v: vec4f) {
  k_cache[i] = v;
}

fn store_v(i: u32, v: vec4f) {
  v_cache[i] = v;
}
