// Q4_0, row-split like Q8_0: the row's f16 scales first (padded to 16 bytes), then each block's 16 bytes
// of nibbles (one vec4). Byte j of a block holds element j (low nibble) and j + 16 (high). Unit
// u = (block u/2, half h = u%2) uses both nibbles of words 2h, 2h+1: elements 8h.. and 16+8h.. .
// Rows in groups of W_GROUP as Q8_0's (q8_0.wgsl): block b of a row is b * W_GROUP vec4s after block 0.

fn w_row(n: u32, k: u32) -> vec2u {
  let nb = k / 32u;
  let head = (nb + 7u) / 8u;
  let base = (n / W_GROUP) * W_GROUP * (head + nb);
  let r = n % W_GROUP;
  return vec2u(base * 8u + r, base + W_GROUP * head + r);
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  let b = u >> 1u;
  let d = w_scale(r, b);
  let q = w_ld(r.y + b * W_GROUP);
  let hi = (u & 1u) == 1u;
  let a = select(q.x, q.z, hi);
  let c = select(q.y, q.w, hi);
  return mat4x4f((w_lo4(a) - 8.0) * d, (w_lo4(c) - 8.0) * d, (w_hi4(a) - 8.0) * d, (w_hi4(c) - 8.0) * d);
}

fn w_unit_k(u: u32) -> vec4u {
  return (u >> 1u) * 32u + (u & 1u) * 8u + vec4u(0u, 4u, 16u, 20u);
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let b = s >> 1u;
  let d = w_scale(r, b);
  let q = w_ld(r.y + b * W_GROUP);
  // Low nibbles are elements 0..15 of the block, high nibbles 16..31.
  let sh = (s & 1u) * 4u;
  return mat4x4f((w_lo4(q.x >> sh) - 8.0) * d, (w_lo4(q.y >> sh) - 8.0) * d, (w_lo4(q.z >> sh) - 8.0) * d, (w_lo4(q.w >> sh) - 8.0) * d);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_span(r, i / 16u)[(i / 4u) % 4u][i % 4u];
}

// For kernels that walk whole blocks (quant/block-walk.wgsl) -------------------------------------------

// One block a step (block-walk.wgsl): its scale (from the header vec4, as in q8_0.wgsl) and its 16
// bytes of nibbles.
const WALK_STEP = 1u;
alias WState = vec4u;

struct WBlock {
  d: f32,
  q: vec4u,
}

fn w_step(r: vec2u, lead: vec2u, b: u32, h: ptr<function, WState>) {
  *h = w_ld(w_scale_index(lead, b) >> 3u);
}

fn w_step_block(r: vec2u, b: u32, i: u32, h: ptr<function, WState>) -> WBlock {
  return WBlock(scale_in(*h, w_scale_index(r, b + i)), w_ld(r.y + (b + i) * W_GROUP));
}

// sum((q - 8) x) = sum(q x) - 8 sum(x): the nibbles (0..15) dotted as they are (left in place, x placed
// to match: X_PLACE in common.wgsl), the offset taken once per block from x's sum. With quantized x every
// product and sum is an integer below 2^24, so exact.
fn block_dot(k: WBlock, x: XBlock) -> f32 {
  let a = dot(w_lo4_placed(k.q.x), x.lo[0] * X_PLACE) + dot(w_lo4_placed(k.q.y), x.lo[1] * X_PLACE) + dot(w_lo4_placed(k.q.z), x.lo[2] * X_PLACE) + dot(w_lo4_placed(k.q.w), x.lo[3] * X_PLACE);
  let c = dot(w_lo4_placed(k.q.x >> 4u), x.hi[0] * X_PLACE) + dot(w_lo4_placed(k.q.y >> 4u), x.hi[1] * X_PLACE) + dot(w_lo4_placed(k.q.z >> 4u), x.hi[2] * X_PLACE) + dot(w_lo4_placed(k.q.w >> 4u), x.hi[3] * X_PLACE);
  return k.d * x.d * (a + c - 8.0 * x.s);
}
