// The tails' access to the product's y declared as f32s (matmul-common.wgsl): four consecutive values
// from element e.
fn tail_in(e: u32) -> vec4f {
  return vec4f(y[e], y[e + 1u], y[e + 2u], y[e + 3u]);
}

fn tail_out(e: u32, v: vec4f) {
  y[e] = v.x;
  y[e + 1u] = v.y;
  y[e + 2u] = v.z;
  y[e + 3u] = v.w;
}
