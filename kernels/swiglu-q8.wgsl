// The gated activation written as int8 blocks of 32 (put_xq_group, quantize-x-block.wgsl): the input of
// a down product that reads quantized x on a CPU rasteriser, with no quantize pass of its own. Each value
// is act(gate) * up as swiglu.wgsl computes it, so the bits equal swiglu.wgsl's output quantized by
// quantize-x-q8.wgsl. One invocation per (token, group of XQ_GROUP); n % XQ_GROUP == 0, offsets and
// in_stride % 4 == 0.

// Params and params: swiglu-params.wgsl.

override WG: u32 = 64u;

@group(0) @binding(0) var<storage, read> gate: array<vec4f>;
@group(0) @binding(1) var<storage, read> up: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> xq: array<vec4u>;

var<private> gate_row: u32;
var<private> up_row: u32;

fn x_value(i: u32) -> vec4f {
  let g = gate[gate_row + i];
  return vec4f(act(g.x), act(g.y), act(g.z), act(g.w)) * up[up_row + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let groups = params.n / XQ_GROUP;
  let item = gid.x + gid.y * nwg.x * WG;
  if (item >= params.tokens * groups) { return; }
  let t = item / groups;
  let g = item % groups;
  gate_row = (params.gate_offset + t * params.in_stride) / 4u;
  up_row = (params.up_offset + t * params.in_stride) / 4u;
  put_xq_group(t * params.out_stride, g * (XQ_GROUP / 32u), g * (XQ_GROUP / 4u));
}
