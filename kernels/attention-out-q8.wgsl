// Attention's output quantized for the O product as llama.cpp quantizes it (quantize-x-block.wgsl, 32-value
// mode: head dimensions that are multiples of 32), so no quantize pass runs between them. Rows are laid
// out as quantize-x.ts says (q8RowVec4s): out_offset and out_stride count vec4s. The same bits as the f32 output then the
// quantize pass (test/kernels/attention.test.ts).
@group(0) @binding(6) var<storage, read_write> xq: array<vec4u>;

var<private> head_out: array<vec4f, MAX_HEAD_VEC>;

fn x_value(i: u32) -> vec4f {
  return head_out[i];
}

fn store_head(t: u32, h: u32, acc: ptr<function, array<vec4f, MAX_HEAD_VEC>>, l: f32) {
  for (var d = 0u; d < HV; d++) { head_out[d] = (*acc)[d] / l; }
  // Blocks of 32 values, 8 vec4s each: the head's are blocks h * HV / 8 on of the token's row.
  let row = params.out_offset + t * params.out_stride;
  for (var b = 0u; b < HV / 8u; b++) { put_xq_group(row, h * (HV / 8u) + b, 8u * b); }
}
