// The KV cache in its 'f16' format (kv-format.ts) for the vec4 attention kernels: values in half precision,
// packed in pairs, a vec4u holding 8, so k_pair(b, d) / v_pair(b, d), vec4s d and d + 1 (d even) of the
// head whose first vec4 is b (even: heads are whole vec4 pairs), are one load where the f32 format takes
// two. Heads here are whole vec4 pairs, so the kernels never ask for k_one / v_one (AttentionKernel
// refuses this format for other heads).
@group(0) @binding(1) var<storage, read> k_cache: array<vec4u>;
@group(0) @binding(2) var<storage, read> v_cache: array<vec4u>;
// halves_to_f32 and unpack_pair: attention-halves.wgsl.

fn k_pair(b: u32, d: u32) -> mat2x4f {
  return unpack_pair(k_cache[(b + d) >> 1u]);
}

fn v_pair(b: u32, d: u32) -> mat2x4f {
  return unpack_pair(v_cache[(b + d) >> 1u]);
}
