// x[i .. i+3] when x offsets and strides are multiples of 4 (every x4 call site uses k = 4m).
fn x4(i: u32) -> vec4f {
  return x[i >> 2u];
}

fn x1(i: u32) -> f32 {
  return x[i >> 2u][i & 3u];
}
