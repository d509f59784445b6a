// attention-parallel.wgsl's result where one workgroup takes all of a (token, head) pair's positions:
// vec4 j of the head's output, its value sums over the softmax sum.

fn store_sum(t: u32, h: u32, split: u32, j: u32, a: vec4f, m: f32, l: f32) {
  out[(params.out_offset + t * params.out_stride) / 4u + h * HV + j] = a / l;
}
