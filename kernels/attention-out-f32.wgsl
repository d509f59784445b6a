// Attention's output as f32 rows (out_offset, out_stride in elements), for the vec4 kernels.
@group(0) @binding(6) var<storage, read_write> out: array<vec4f>;

// Head h of token t: its accumulated values over their softmax sum.
fn store_head(t: u32, h: u32, acc: ptr<function, array<vec4f, MAX_HEAD_VEC>>, l: f32) {
  let ob = (params.out_offset + t * params.out_stride) / 4u + h * HV;
  for (var d = 0u; d < HV; d++) { out[ob + d] = (*acc)[d] / l; }
}
