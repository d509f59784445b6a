// Q8_0, row-split: a row is its blocks' f16 scales (padded to 16 bytes), then each block's 32 int8
// quants (two vec4s). Moving the 2-byte scales out of the 34-byte blocks aligns every quant word at
// no cost in size. Unit u is half a block: 16 consecutive weights, one vec4.
// In groups of W_GROUP rows (layouts.ts; 1 on GPUs): the group's scales block by block (w_scale in
// common.wgsl), then block 0 of each of its rows, block 1 of each, and so on, so that a CPU rasteriser's
// invocation walking W_GROUP rows side by side reads one sequential stream.

fn w_row(n: u32, k: u32) -> vec2u {
  let nb = k / 32u;
  let head = (nb + 7u) / 8u;
  let base = (n / W_GROUP) * W_GROUP * (head + nb * 2u);
  let r = n % W_GROUP;
  return vec2u(base * 8u + r, base + W_GROUP * head + 2u * r);
}

// The vec4 of quants j (block j / 2, its half j % 2) of the row with handle r.
fn w_quants(r: vec2u, j: u32) -> vec4u {
  return w_ld(r.y + (j >> 1u) * 2u * W_GROUP + (j & 1u));
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let d = w_scale(r, s >> 1u);
  let q = w_quants(r, s);
  return mat4x4f(w_sbytes(q.x) * d, w_sbytes(q.y) * d, w_sbytes(q.z) * d, w_sbytes(q.w) * d);
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  return w_span(r, u);
}

fn w_unit_k(u: u32) -> vec4u {
  return u * 16u + vec4u(0u, 4u, 8u, 12u);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_span(r, i / 16u)[(i / 4u) % 4u][i % 4u];
}

// For kernels that walk whole blocks (quant/block-walk.wgsl) -------------------------------------------

// One block a step (block-walk.wgsl): the header vec4 of the block's 8 scales, then its 32 quants (two
// vec4s of words). The header is loaded at every block: walking two blocks a step to share it was slower
// (the long decode probe 14.3 -> 12.3 GB/s, session 12).
const WALK_STEP = 1u;
alias WState = vec4u;

struct WBlock {
  d: f32,
  q0: vec4u,
  q1: vec4u,
}

fn w_step(r: vec2u, lead: vec2u, b: u32, h: ptr<function, WState>) {
  *h = w_ld(w_scale_index(lead, b) >> 3u);
}

fn w_step_block(r: vec2u, b: u32, i: u32, h: ptr<function, WState>) -> WBlock {
  let c = b + i;
  return WBlock(scale_in(*h, w_scale_index(r, c)), w_quants(r, 2u * c), w_quants(r, 2u * c + 1u));
}

// A block's quants dotted with its x values, times both scales. The quants are taken times 2^24
// (w_sbytes_top: one instruction a byte fewer to unpack), the 2^24 taken back once at the end, exactly.
fn block_dot(k: WBlock, x: XBlock) -> f32 {
  let a = dot(w_sbytes_top(k.q0.x), x.lo[0]) + dot(w_sbytes_top(k.q0.y), x.lo[1]) + dot(w_sbytes_top(k.q0.z), x.lo[2]) + dot(w_sbytes_top(k.q0.w), x.lo[3]);
  let c = dot(w_sbytes_top(k.q1.x), x.hi[0]) + dot(w_sbytes_top(k.q1.y), x.hi[1]) + dot(w_sbytes_top(k.q1.z), x.hi[2]) + dot(w_sbytes_top(k.q1.w), x.hi[3]);
  return k.d * x.d * (a + c) * (1.0 / 16777216.0);
}
