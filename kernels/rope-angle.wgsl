// The rotation angle of pair i at a position, shared by rope.wgsl and rope-kv-store.wgsl so both give
// the same bits: pos * freq_scale * freq_base^(-2i / n_rot), divided by the pair's frequency factor
// when `factors` holds them (llama 3 long-context scaling).
fn rope_theta(pos: u32, i: u32, n_rot: u32, freq_base: f32, freq_scale: f32, use_factors: u32) -> f32 {
  var theta = f32(pos) * freq_scale * pow(freq_base, -2.0 * f32(i) / f32(n_rot));
  if (use_factors != 0u) { theta = theta / factors[i]; }
  return theta;
}

// The two elements of a head that pair i < n_rot / 2 rotates: (2i, 2i+1) in normal (GPT-J/llama) order,
// (i, i + n_rot/2) in NeoX order.
fn rope_pair_index(i: u32, half_rot: u32, neox: u32) -> vec2u {
  if (neox != 0u) { return vec2u(i, i + half_rot); }
  return vec2u(2u * i, 2u * i + 1u);
}
