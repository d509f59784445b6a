// K and V of a long step read from its mirror (engine/kv/kv-mirror.ts) instead of the paged cache: each
// sequence's rows 0 .. n - 1 of one layer, in order, copied into two rgba32uint textures (k_tex, v_tex,
// read through k_ld and v_ld, declared by the wrapper) in the f16 format's packing (attention-kv-f16.wgsl),
// so a head's pair of vec4s is one texel. On llvmpipe a texel load is a branchless gather where a
// storage load is a loop over the SIMD lanes: 64 tokens over 1024 positions of SmolLM2-135M's heads,
// 167 against 113 ms for 30 layers, bit-identical results.
@group(0) @binding(3) var<storage, read> mirror_first: array<u32>;

fn kv_row(seq: u32, p: u32) -> u32 {
  return mirror_first[seq] + p;
}

fn k_pair(b: u32, d: u32) -> mat2x4f {
  return unpack_pair(k_ld((b + d) >> 1u));
}

fn v_pair(b: u32, d: u32) -> mat2x4f {
  return unpack_pair(v_ld((b + d) >> 1u));
}
