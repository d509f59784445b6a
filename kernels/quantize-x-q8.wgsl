// Rows of x quantized to int8 in blocks of 32, the way llama.cpp's CPU backend quantizes activations for
// its Q8_0 products (quantize_row_q8_0, SIMD path): d = max|x| / 127, q = round-half-even(x * 127 / max|x|),
// d kept as f16. A CPU rasteriser's Q8_0 tiled product (matmul-regs-q8_0.wgsl with x-q8.wgsl) then loads
// three vec4s per token and block instead of eight.
//
// Row r of xq: blocks b = 0 .. k/32-1 at vec4s r * row_vec4s + 3b: two vec4s of quants (byte i of the
// pair is element 32b + i), then the scale in .x of the third (the other words are 0).

struct Params {
  tokens: u32,
  k: u32,
  // Element offset of x[0, 0] and elements between rows of x (multiples of 4).
  x_offset: u32,
  x_stride: u32,
  // vec4s between rows of xq (3 per block).
  row_vec4s: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> x: array<vec4f>;
@group(0) @binding(1) var<storage, read_write> xq: array<vec4u>;
@group(1) @binding(0) var<uniform> params: Params;

fn pack_bytes(v: vec4f) -> u32 {
  let b = bitcast<vec4u>(vec4i(v)) & vec4u(0xffu);
  return b.x | (b.y << 8u) | (b.z << 16u) | (b.w << 24u);
}

// One invocation per (token, block).
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let blocks = params.k / 32u;
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * blocks) { return; }
  let t = item / blocks;
  let b = item % blocks;
  let xb = (params.x_offset + t * params.x_stride) / 4u + 8u * b;
  var v: array<vec4f, 8>;
  var m = vec4f();
  for (var i = 0u; i < 8u; i++) {
    v[i] = x[xb + i];
    m = max(m, abs(v[i]));
  }
  let amax = max(max(m.x, m.y), max(m.z, m.w));
  let id = select(0.0, 127.0 / amax, amax != 0.0);
  let d = unpack2x16float(pack2x16float(vec2f(amax / 127.0, 0.0))).x;
  let o = t * params.row_vec4s + 3u * b;
  xq[o] = vec4u(pack_bytes(round(v[0] * id)), pack_bytes(round(v[1] * id)), pack_bytes(round(v[2] * id)), pack_bytes(round(v[3] * id)));
  xq[o + 1u] = vec4u(pack_bytes(round(v[4] * id)), pack_bytes(round(v[5] * id)), pack_bytes(round(v[6] * id)), pack_bytes(round(v[7] * id)));
  xq[o + 2u] = vec4u(bitcast<u32>(d), 0u, 0u, 0u);
}
