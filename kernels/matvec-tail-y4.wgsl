// The tails' access to the product's y declared as vec4s (withVec4Y, for products storing four rows at
// once): the vec4 at element e, a multiple of 4.
fn tail_in(e: u32) -> vec4f {
  return y[e >> 2u];
}

fn tail_out(e: u32, v: vec4f) {
  y[e >> 2u] = v;
}
