// How matvec-dp4a.wgsl reads x: plainly (x_in leaves x4's values as they are).

fn x_scales(lid: u32, sg: u32, nsg: u32, lane: u32) -> array<f32, MAX_T> {
  return array<f32, MAX_T>(1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0);
}

fn x_in(v: vec4f, i: u32, s: f32) -> vec4f {
  return v;
}
