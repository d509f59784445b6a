// Q6_K, row-split: the row's f16 super-block scales d first (padded to 16 bytes), then each block's 208
// bytes as in the file without d (13 vec4s): ql at vec4s 0-7, qh at 8-11, int8 sub-block scales at 12.
// In each 128-element half h, byte l < 32 of ql/qh serves elements l, l+32, l+64, l+96, so a unit takes
// one word of qh and the two ql words it pairs with: 4 columns 32 apart, every bit used.

// Rows in groups of W_GROUP as Q8_0's (q8_0.wgsl): super-block b of a row is b * 13 * W_GROUP vec4s
// after super-block 0.
fn w_row(n: u32, k: u32) -> vec2u {
  let nb = k / 256u;
  let head = (nb + 7u) / 8u;
  let base = (n / W_GROUP) * W_GROUP * (head + nb * 13u);
  let r = n % W_GROUP;
  return vec2u(base * 8u + r, base + W_GROUP * head + 13u * r);
}

// Signed byte j % 4 of word v, times d.
fn q6k_scale(v: u32, j: u32, d: f32) -> f32 {
  return d * f32(extractBits(bitcast<i32>(v), (j % 4u) * 8u, 8u));
}

// The 6-bit quants (0..63) of four bytes: each byte's low nibble from `lo`, its two high bits from the low
// bits of `hi`'s byte, joined in one word before the bytes are split.
fn q6k_quants(lo: u32, hi: u32) -> vec4f {
  return vec4f((vec4u(q6k_join(lo, hi)) >> vec4u(0u, 8u, 16u, 24u)) & vec4u(63u));
}

fn q6k_join(lo: u32, hi: u32) -> u32 {
  return (lo & 0x0f0f0f0fu) | ((hi & 0x03030303u) << 4u);
}

// The same quants left in place, byte j worth 2^(8j) of its value (for block_dot, with x placed to match:
// X_PLACE in common.wgsl).
fn q6k_quants_placed(lo: u32, hi: u32) -> vec4f {
  return vec4f(bitcast<vec4i>(vec4u(q6k_join(lo, hi)) & vec4u(0x3fu, 0x3f00u, 0x3f0000u, 0x3f000000u)));
}

fn q6k_col(lo: u32, hi: u32) -> vec4f {
  return q6k_quants(lo, hi) - 32.0;
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  let nb = u >> 4u;
  let b = r.y + nb * 13u * W_GROUP;
  let d = w_scale(r, nb);
  let h = (u >> 3u) & 1u;
  let l = u & 7u;
  let q0 = w_ld(b + h * 4u + l / 4u)[l % 4u];
  let q1 = w_ld(b + h * 4u + 2u + l / 4u)[l % 4u];
  let qh = w_ld(b + 8u + h * 2u + l / 4u)[l % 4u];
  // Scales of columns 0, 1 (sub-blocks j, j+2) share a word; so do those of columns 2, 3 (j+4, j+6).
  let sc = w_ld(b + 12u);
  let j = l / 4u;
  let s01 = select(sc.x, sc.z, h == 1u);
  let s23 = select(sc.y, sc.w, h == 1u);
  return mat4x4f(
    q6k_col(q0, qh) * q6k_scale(s01, j, d),
    q6k_col(q1, qh >> 2u) * q6k_scale(s01, j + 2u, d),
    q6k_col(q0 >> 4u, qh >> 4u) * q6k_scale(s23, j, d),
    q6k_col(q1 >> 4u, qh >> 6u) * q6k_scale(s23, j + 2u, d),
  );
}

fn w_unit_k(u: u32) -> vec4u {
  return (u >> 4u) * 256u + ((u >> 3u) & 1u) * 128u + (u & 7u) * 4u + vec4u(0u, 32u, 64u, 96u);
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let nb = s >> 4u;
  let b = r.y + nb * 13u * W_GROUP;
  let d = w_scale(r, nb);
  let v = s & 15u;
  let h = v >> 3u;
  let g = (v >> 1u) & 3u;     // which of the four 32-element columns of the half
  let odd = v & 1u;           // first or second 16 of them
  let ql = w_ld(b + h * 4u + (g & 1u) * 2u + odd);
  let qh = w_ld(b + 8u + h * 2u + odd);
  // Sub-block 8h + odd + 2g: byte (odd + 2g) % 4 of scale word 2h + g / 2.
  let sc = q6k_scale(w_ld(b + 12u)[h * 2u + g / 2u], odd + 2u * g, d);
  let lsh = (g >> 1u) * 4u;
  let hsh = g * 2u;
  return mat4x4f(
    q6k_col(ql.x >> lsh, qh.x >> hsh) * sc,
    q6k_col(ql.y >> lsh, qh.y >> hsh) * sc,
    q6k_col(ql.z >> lsh, qh.z >> hsh) * sc,
    q6k_col(ql.w >> lsh, qh.w >> hsh) * sc,
  );
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_span(r, i / 16u)[(i / 4u) % 4u][i % 4u];
}

// For kernels that walk whole blocks (quant/block-walk.wgsl): a walk's "block" is 32 elements, column g
// of half h of a 256-element block (two 16-element sub-blocks, each with its own scale).

// Four blocks a step (block-walk.wgsl): the four columns of one half, which share its ql (four vec4s)
// and qh (two) words, loaded once for the four with the block's d and the half's two scale words
// (before steps, every column loaded all nine vec4s).
const WALK_STEP = 4u;

struct WState {
  d: f32,
  s01: u32,
  s23: u32,
  l0: vec4u,
  l1: vec4u,
  l2: vec4u,
  l3: vec4u,
  q0: vec4u,
  q1: vec4u,
}

struct WBlock {
  dlo: f32,
  dhi: f32,
  l0: vec4u,
  l1: vec4u,
  h0: vec4u,
  h1: vec4u,
  lsh: u32,
  hsh: u32,
}

fn w_step(r: vec2u, lead: vec2u, b: u32, s: ptr<function, WState>) {
  let nb = b >> 3u;
  let h = (b >> 2u) & 1u;
  let base = r.y + nb * 13u * W_GROUP;
  (*s).d = scale_in(w_ld(w_scale_index(lead, nb) >> 3u), w_scale_index(r, nb));
  // Sub-blocks 8h .. 8h + 3 (columns 0 and 1) have their scales in word 2h, 8h + 4 .. 8h + 7 in 2h + 1.
  let sc = w_ld(base + 12u);
  (*s).s01 = select(sc.x, sc.z, h == 1u);
  (*s).s23 = select(sc.y, sc.w, h == 1u);
  (*s).l0 = w_ld(base + h * 4u);
  (*s).l1 = w_ld(base + h * 4u + 1u);
  (*s).l2 = w_ld(base + h * 4u + 2u);
  (*s).l3 = w_ld(base + h * 4u + 3u);
  (*s).q0 = w_ld(base + 8u + h * 2u);
  (*s).q1 = w_ld(base + 9u + h * 2u);
}

// Column g = i: its ql words are the half's first or second pair (low or high nibbles), its qh bits 2g.
fn w_step_block(r: vec2u, b: u32, g: u32, s: ptr<function, WState>) -> WBlock {
  let second = (g & 1u) == 1u;
  let word = select((*s).s01, (*s).s23, g >= 2u);
  return WBlock(q6k_scale(word, 2u * g, (*s).d), q6k_scale(word, 2u * g + 1u, (*s).d), select((*s).l0, (*s).l2, second), select((*s).l1, (*s).l3, second), (*s).q0, (*s).q1, (g >> 1u) * 4u, g * 2u);
}

// sum((q - 32) x) = sum(q x) - 32 sum(x) for each 16-element sub-block (x's first and second 16 values):
// the quants dotted as they are, the offset taken once per sub-block from x's sums (shared by every row
// an invocation walks). With quantized x every product and sum is an integer below 2^24, so exact.
fn block_dot(k: WBlock, x: XBlock) -> f32 {
  let a = dot(q6k_quants_placed(k.l0.x >> k.lsh, k.h0.x >> k.hsh), x.lo[0] * X_PLACE) + dot(q6k_quants_placed(k.l0.y >> k.lsh, k.h0.y >> k.hsh), x.lo[1] * X_PLACE) + dot(q6k_quants_placed(k.l0.z >> k.lsh, k.h0.z >> k.hsh), x.lo[2] * X_PLACE) + dot(q6k_quants_placed(k.l0.w >> k.lsh, k.h0.w >> k.hsh), x.lo[3] * X_PLACE);
  let c = dot(q6k_quants_placed(k.l1.x >> k.lsh, k.h1.x >> k.hsh), x.hi[0] * X_PLACE) + dot(q6k_quants_placed(k.l1.y >> k.lsh, k.h1.y >> k.hsh), x.hi[1] * X_PLACE) + dot(q6k_quants_placed(k.l1.z >> k.lsh, k.h1.z >> k.hsh), x.hi[2] * X_PLACE) + dot(q6k_quants_placed(k.l1.w >> k.lsh, k.h1.w >> k.hsh), x.hi[3] * X_PLACE);
  let slo = dot(x.lo[0] + x.lo[1] + x.lo[2] + x.lo[3], vec4f(1.0));
  return x.d * (k.dlo * (a - 32.0 * slo) + k.dhi * (c - 32.0 * (x.s - slo)));
}
