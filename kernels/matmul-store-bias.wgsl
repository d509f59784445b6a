// Products with a bias (qwen2's Q/K/V): y[t, n] (+)= v + bias[n]. Adding it where the result is stored
// costs no dispatch and no extra pass over y, unlike a separate broadcast add.
@group(0) @binding(3) var<storage, read> bias: array<f32>;

fn store(t: u32, n: u32, v: f32) {
  let i = params.y_offset + t * params.y_stride + n;
  let b = v + bias[params.bias_offset + n];
  if (params.accumulate != 0u) {
    y[i] = y[i] + b;
  } else {
    y[i] = b;
  }
}
