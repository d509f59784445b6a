// attention-parallel.wgsl's result where a (token, head) pair's positions are split over workgroups:
// each split's unnormalized value sums and, after them, its softmax maximum and sum, HV + 1 vec4s a split
// in the buffer bound as out (splits of a pair side by side), for attention-combine.wgsl to merge. A split
// with no positions writes a maximum of -3.4e38 and a sum of 0, which the merge weighs to nothing.

fn store_sum(t: u32, h: u32, split: u32, j: u32, a: vec4f, m: f32, l: f32) {
  let base = ((t * params.heads + h) * params.splits + split) * (HV + 1u);
  out[base + j] = a;
  if (j == 0u) { out[base + HV] = vec4f(m, l, 0.0, 0.0); }
}
