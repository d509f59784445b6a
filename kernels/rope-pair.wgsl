// The rotation itself, shared by rope.wgsl and train/rope.wgsl (joined to each; both name their buffer
// `x` and carry `neox` in Params) so the engine and the trainer rotate the same pairs: pair i of the
// head starting at x[base], in place, by the angle whose cosine and sine are c and s.
// Normal (GPT-J/llama) order rotates (2i, 2i+1); NeoX order rotates (i, i + n_rot/2).
fn rope_rotate(base: u32, i: u32, half_rot: u32, c: f32, s: f32) {
  var a: u32;
  var b: u32;
  if (params.neox != 0u) {
    a = base + i;
    b = base + i + half_rot;
  } else {
    a = base + 2u * i;
    b = a + 1u;
  }
  let x0 = x[a];
  let x1 = x[b];
  x[a] = x0 * c - x1 * s;
  x[b] = x0 * s + x1 * c;
}
