// y[t, n] = v, or y[t, n] += v when accumulating (a fused residual add).
fn store(t: u32, n: u32, v: f32) {
  let i = params.y_offset + t * params.y_stride + n;
  if (params.accumulate != 0u) {
    y[i] = y[i] + v;
  } else {
    y[i] = v;
  }
}
