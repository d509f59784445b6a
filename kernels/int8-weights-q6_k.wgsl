// Q6_K weights for the int8 decode product (matvec-dp4a.wgsl): 32-element block b as bytes, each half
// (a 16-element sub-block) with its own int8 scale: a weight is d scale (q - 32), q six bits from a ql
// nibble and two qh bits, as w_span (q6_k.wgsl) lays them out for spans 2b and 2b + 1.

fn w_int8(r: vec2u, b: u32) -> WInt8 {
  let nb = b >> 3u;
  let base = r.y + nb * 13u * W_GROUP;
  let d = w_scale(r, nb);
  let v = (2u * b) & 15u;
  let h = v >> 3u;
  let g = (v >> 1u) & 3u;
  let lsh = vec4u((g >> 1u) * 4u);
  let hsh = vec4u(g * 2u);
  let lo = vec4u(0x0f0f0f0fu);
  let hi = vec4u(0x03030303u);
  let ql = base + h * 4u + (g & 1u) * 2u;
  let qh = base + 8u + h * 2u;
  let q0 = ((w_ld(ql) >> lsh) & lo) | (((w_ld(qh) >> hsh) & hi) << vec4u(4u));
  let q1 = ((w_ld(ql + 1u) >> lsh) & lo) | (((w_ld(qh + 1u) >> hsh) & hi) << vec4u(4u));
  // Sub-blocks 8h + 2g and 8h + 2g + 1: bytes 2g % 4 and (2g + 1) % 4 of scale word 2h + g / 2.
  let sw = w_ld(base + 12u)[h * 2u + g / 2u];
  let sc = d * vec2f(q6k_scale(sw, 2u * g, 1.0), q6k_scale(sw, 2u * g + 1u, 1.0));
  return WInt8(q0, q1, sc, -32.0 * sc);
}
