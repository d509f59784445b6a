// Q4_K, exactly as in the file: 144-byte blocks are nine vec4s. vec4 0 = (f16 d | f16 dmin, then twelve
// bytes of packed 6-bit scales and mins), vec4s 1-8 = quants. Each 64-element chunk c of a block is two
// vec4s; their low nibbles are elements 64c..64c+31 (sub-block 2c), high nibbles 64c+32.. (sub-block
// 2c+1). Unit u = (block u/16, chunk c, word pair i) uses both nibbles of two words.

// Rows in groups of W_GROUP (layouts.ts; 1 on GPUs): block b of each of the group's rows, then block b + 1
// of each, so block b of a row is b * 9 * W_GROUP vec4s after its block 0.
fn w_row(n: u32, k: u32) -> vec2u {
  return vec2u((n / W_GROUP) * W_GROUP * (k / 256u) * 9u + (n % W_GROUP) * 9u);
}

// The 6-bit scales and mins of a block whose first vec4 is `h`, a byte each: (scales of sub-blocks 0-3,
// mins 0-3, scales 4-7, mins 4-7). ggml's get_scale_min_k4, done on whole words: sub-blocks 0-3 take the
// low 6 bits of bytes 0-3 (scales) and 4-7 (mins); 4-7 take nibbles of bytes 8-11 and the top 2 bits of
// bytes 0-7.
fn q4k_scale_words(h: vec4u) -> vec4u {
  return vec4u(
    h.y & 0x3f3f3f3fu,
    h.z & 0x3f3f3f3fu,
    (h.w & 0x0f0f0f0fu) | (((h.y >> 6u) & 0x03030303u) << 4u),
    ((h.w >> 4u) & 0x0f0f0f0fu) | (((h.z >> 6u) & 0x03030303u) << 4u),
  );
}

// (d * scale, dmin * min) of sub-blocks j and j+1 (j even) of a block whose first vec4 is `h`, as
// (scale_j, min_j, scale_j+1, min_j+1).
fn q4k_scales(h: vec4u, j: u32) -> vec4f {
  let words = q4k_scale_words(h);
  let sc = select(words.x, words.z, j >= 4u);
  let mn = select(words.y, words.w, j >= 4u);
  let sh = (j & 3u) * 8u;
  let dm = unpack2x16float(h.x);
  let v = vec4f(vec4u(sc >> sh, mn >> sh, sc >> (sh + 8u), mn >> (sh + 8u)) & vec4u(0xffu));
  return v * dm.xyxy;
}

fn w_unit(r: vec2u, u: u32) -> mat4x4f {
  let b = r.y + (u >> 4u) * 9u * W_GROUP;
  let c = (u >> 2u) & 3u;
  let s = q4k_scales(w_ld(b), 2u * c);
  let q = w_ld(b + 1u + c * 2u + ((u >> 1u) & 1u));
  let odd = (u & 1u) == 1u;
  let a = select(q.x, q.z, odd);
  let e = select(q.y, q.w, odd);
  return mat4x4f(w_lo4(a) * s.x - s.y, w_lo4(e) * s.x - s.y, w_hi4(a) * s.z - s.w, w_hi4(e) * s.z - s.w);
}

fn w_unit_k(u: u32) -> vec4u {
  return (u >> 4u) * 256u + ((u >> 2u) & 3u) * 64u + (u & 3u) * 8u + vec4u(0u, 4u, 32u, 36u);
}

fn w_span(r: vec2u, s: u32) -> mat4x4f {
  let b = r.y + (s >> 4u) * 9u * W_GROUP;
  let j = (s >> 1u) & 7u;
  let sm = q4k_scales(w_ld(b), j & 6u);
  let odd = (j & 1u) == 1u;
  let d = select(sm.x, sm.z, odd);
  let m = select(sm.y, sm.w, odd);
  let q = w_ld(b + 1u + (j >> 1u) * 2u + (s & 1u));
  let sh = select(0u, 4u, odd);
  return mat4x4f(w_lo4(q.x >> sh) * d - m, w_lo4(q.y >> sh) * d - m, w_lo4(q.z >> sh) * d - m, w_lo4(q.w >> sh) * d - m);
}

fn w_elem(r: vec2u, i: u32) -> f32 {
  return w_span(r, i / 16u)[(i / 4u) % 4u][i % 4u];
}

// For kernels that walk whole blocks (quant/block-walk.wgsl): a walk's "block" is a 32-element sub-block.

// A step (block-walk.wgsl) is the block's 8 sub-blocks: its header vec4 loaded once, every (d * scale,
// dmin * min) unpacked from it at once, and each sub-block pair's two quant vec4s (low nibbles: the even
// sub-block, high: the odd) loaded at the pair's even sub-block: 9 loads for 8 sub-blocks, where walking
// them one at a time loaded 3 each. The load sits behind `i`'s parity, which folds away where the kernel
// writes the step out (i a literal); where it loops over the step, it is a masked region.
const WALK_STEP = 8u;

struct WState {
  dlo: vec4f,
  dhi: vec4f,
  mlo: vec4f,
  mhi: vec4f,
  q0: vec4u,
  q1: vec4u,
}

struct WBlock {
  d: f32,
  m: f32,
  q0: vec4u,
  q1: vec4u,
  shift: u32,
}

fn q4k_bytes(v: u32) -> vec4f {
  return vec4f((vec4u(v) >> vec4u(0u, 8u, 16u, 24u)) & vec4u(0xffu));
}

fn w_step(r: vec2u, lead: vec2u, b: u32, s: ptr<function, WState>) {
  let h = w_ld(r.y + (b >> 3u) * 9u * W_GROUP);
  let words = q4k_scale_words(h);
  let dm = unpack2x16float(h.x);
  (*s).dlo = q4k_bytes(words.x) * dm.x;
  (*s).mlo = q4k_bytes(words.y) * dm.y;
  (*s).dhi = q4k_bytes(words.z) * dm.x;
  (*s).mhi = q4k_bytes(words.w) * dm.y;
}

fn w_step_block(r: vec2u, b: u32, i: u32, s: ptr<function, WState>) -> WBlock {
  if ((i & 1u) == 0u) {
    let base = r.y + (b >> 3u) * 9u * W_GROUP;
    (*s).q0 = w_ld(base + 1u + i);
    (*s).q1 = w_ld(base + 2u + i);
  }
  let hi = i >= 4u;
  return WBlock(select((*s).dlo, (*s).dhi, hi)[i & 3u], select((*s).mlo, (*s).mhi, hi)[i & 3u], (*s).q0, (*s).q1, select(0u, 4u, (i & 1u) == 1u));
}

// sum((d q - m) x) = d sum(q x) - m sum(x), the min taken once per sub-block from x's sum; the nibbles
// left in place and x placed to match (X_PLACE in common.wgsl).
fn block_dot(k: WBlock, x: XBlock) -> f32 {
  let a = dot(w_lo4_placed(k.q0.x >> k.shift), x.lo[0] * X_PLACE) + dot(w_lo4_placed(k.q0.y >> k.shift), x.lo[1] * X_PLACE) + dot(w_lo4_placed(k.q0.z >> k.shift), x.lo[2] * X_PLACE) + dot(w_lo4_placed(k.q0.w >> k.shift), x.lo[3] * X_PLACE);
  let c = dot(w_lo4_placed(k.q1.x >> k.shift), x.hi[0] * X_PLACE) + dot(w_lo4_placed(k.q1.y >> k.shift), x.hi[1] * X_PLACE) + dot(w_lo4_placed(k.q1.z >> k.shift), x.hi[2] * X_PLACE) + dot(w_lo4_placed(k.q1.w >> k.shift), x.hi[3] * X_PLACE);
  return x.d * (k.d * (a + c) - k.m * x.s);
}
