// Quantized x read from its buffer (storage, or a uniform window: matmul-x-window.ts): vec4 i as words.
fn xq_ld(i: u32) -> vec4u {
  return bitcast<vec4u>(x[i]);
}
