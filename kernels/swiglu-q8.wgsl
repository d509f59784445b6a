// The gated activation written as int8 blocks of 32 (put_q8_block, quantize-x-block.wgsl): the input of
// a Q8_0 down product that reads quantized x on a CPU rasteriser, with no quantize pass of its own. Each
// value is act(gate) * up as swiglu.wgsl computes it, so the bits equal swiglu.wgsl's output quantized
// by quantize-x-q8.wgsl. One invocation per (token, block); n % 32 == 0, offsets and in_stride % 4 == 0.

struct Params {
  tokens: u32,
  n: u32,
  gate_offset: u32,
  up_offset: u32,
  in_stride: u32,
  // vec4s between rows of xq (3 per block).
  out_stride: u32,
}

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> gate: array<vec4f>;
@group(0) @binding(1) var<storage, read> up: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> xq: array<vec4u>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let blocks = params.n / 32u;
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * blocks) { return; }
  let t = item / blocks;
  let b = item % blocks;
  let gb = (params.gate_offset + t * params.in_stride) / 4u + 8u * b;
  let ub = (params.up_offset + t * params.in_stride) / 4u + 8u * b;
  var v: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) {
    let g = gate[gb + i];
    v[i] = vec4f(act(g.x), act(g.y), act(g.z), act(g.w)) * up[ub + i];
  }
  put_q8_block(t * params.out_stride + 3u * b, v);
}
