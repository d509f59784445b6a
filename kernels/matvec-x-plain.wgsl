// How the GPU matrix-vector kernels (matvec-coop.wgsl, matvec-subgroup.wgsl) read x: plainly. The
// norm-fused products use matvec-x-norm.wgsl instead, with the same four functions.

fn norm_prologue(lid: u32) {}

// Dot of a decoded unit with the x values at its four column positions (row of x starting at xb).
fn unit_dot(m: mat4x4f, kk: vec4u, xb: u32) -> f32 {
  return dot(m[0], x4(xb + kk.x)) + dot(m[1], x4(xb + kk.y)) + dot(m[2], x4(xb + kk.z)) + dot(m[3], x4(xb + kk.w));
}

// x[xb + i] for the tail of a row.
fn x_at(xb: u32, i: u32) -> f32 {
  return x1(xb + i);
}

fn out_scale(t: u32) -> f32 {
  return 1.0;
}
