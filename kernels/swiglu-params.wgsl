// Parameters of the gated-activation passes (swiglu.wgsl, swiglu-q8.wgsl). Offsets and in_stride count
// elements of gate/up; out_stride counts elements of out (swiglu.wgsl) or vec4s of xq (swiglu-q8.wgsl).

struct Params {
  tokens: u32,
  n: u32,
  gate_offset: u32,
  up_offset: u32,
  in_stride: u32,
  out_stride: u32,
}

@group(1) @binding(0) var<uniform> params: Params;
