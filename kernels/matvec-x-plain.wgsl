// How the GPU matrix-vector kernels (matvec-coop.wgsl, matvec-subgroup.wgsl) read x: plainly. The
// norm-fused products use matvec-x-norm.wgsl instead, with the same three functions; here the sums
// of squares stay 0 and the compiler drops them.

// (dot of a decoded unit with x at its four column positions, 0); row of x at xb.
fn unit_terms(m: mat4x4f, kk: vec4u, xb: u32) -> vec2f {
  return vec2f(dot(m[0], x4(xb + kk.x)) + dot(m[1], x4(xb + kk.y)) + dot(m[2], x4(xb + kk.z)) + dot(m[3], x4(xb + kk.w)), 0.0);
}

// The same for one weight v at column i (the tail of a row).
fn elem_terms(v: f32, xb: u32, i: u32) -> vec2f {
  return vec2f(v * x1(xb + i), 0.0);
}

fn row_scale(squares: f32) -> f32 {
  return 1.0;
}
