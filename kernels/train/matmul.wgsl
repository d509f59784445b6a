// C = alpha · op(A) · op(B) (+ C when accumulating), all f32, for training: op(A) is M × K, op(B) is K × N,
// either may be read transposed, so one kernel serves the forward products (X·Wᵀ), the input gradients
// (dY·W) and the weight gradients (Gᵀ·X). A workgroup of 64 invocations, WX along n by WY along m, computes
// a 4·WY·MV × 4·WX tile of C from TK-deep slices of A and B staged in workgroup memory as vec4s; each
// invocation owns a 4·MV × 4 block of the tile. 64 × 32 tiles (8 rows × 4 columns per invocation: three
// vec4 reads per 32 multiply-adds) serve most products; the adapter's rank-wide ones (x·Aᵀ and dY·B
// with n = rank, dA with m = rank) take 128 × 8 or 8 × 128 tiles, which waste no lanes on them. The
// workgroup is one-dimensional because llvmpipe runs invocations in SIMD lanes along x: a (2, 32)
// workgroup would fill 2 of 8 lanes.
//
// Transposes and the load path are pipeline constants, so the staging loop has no branches on them. With
// VEC4 (offsets, leading dimensions and the stored rows' lengths all multiples of 4) an invocation stages
// a 4 × 4 block of A and one of B with four vec4 loads each, transposing in registers where the stored
// layout runs along k; otherwise it loads element by element. On CPU rasterisers every storage load whose
// address differs between invocations is a gather, so four times fewer loads is most of the kernel's time.

struct Params {
  m: u32,
  n: u32,
  k: u32,
  // Unused (the transposes are pipeline constants); kept so the layout stays as documented.
  trans_a: u32,
  trans_b: u32,
  lda: u32,
  ldb: u32,
  ldc: u32,
  a_offset: u32,
  b_offset: u32,
  c_offset: u32,
  accumulate: u32,
  alpha: f32,
}

@group(0) @binding(0) var<storage, read> a: array<vec4f>;
@group(0) @binding(1) var<storage, read> b: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

override TRANS_A: bool = false;
override TRANS_B: bool = false;
override VEC4: bool = false;

override WX: u32 = 8u;
override WY: u32 = 8u;
override TK: u32 = 32u;
// Row groups of 4 per invocation (1 or 2): an invocation owns a 4·MV × 4 block of C.
override MV: u32 = 1u;
const WG = 64u;

// sa[kk * WY·MV + i] = op(A)[m0 + 4i .. m0 + 4i + 3, k0 + kk]; sb[kk * WX + j] = op(B)[k0 + kk, n0 + 4j .. n0 + 4j + 3].
var<workgroup> sa: array<vec4f, TK * WY * MV>;
var<workgroup> sb: array<vec4f, TK * WX>;

fn a1(i: u32) -> f32 {
  return a[i >> 2u][i & 3u];
}

fn b1(i: u32) -> f32 {
  return b[i >> 2u][i & 3u];
}

fn load_a(row: u32, col: u32) -> f32 {
  if (row >= params.m || col >= params.k) { return 0.0; }
  if (TRANS_A) { return a1(params.a_offset + col * params.lda + row); }
  return a1(params.a_offset + row * params.lda + col);
}

fn load_b(row: u32, col: u32) -> f32 {
  if (row >= params.k || col >= params.n) { return 0.0; }
  if (TRANS_B) { return b1(params.b_offset + col * params.ldb + row); }
  return b1(params.b_offset + row * params.ldb + col);
}

// The vec4 staging of A and of B is one code path, picked by `of_a`. Every caller passes a literal, and the
// drivers inline these functions (Mesa's NIR inlines every call), so each call site compiles to the code
// it would have as a separate A or B copy.

// Four consecutive stored values of A (of_a) or B starting at element i (a multiple of 4), or zeros when
// `live` is false.
fn load4(of_a: bool, i: u32, live: bool) -> vec4f {
  if (!live) { return vec4f(); }
  if (of_a) { return a[i >> 2u]; }
  return b[i >> 2u];
}

// Staged vec4 `at` of sa (of_a) or sb.
fn put4(of_a: bool, at: u32, v: vec4f) {
  if (of_a) { sa[at] = v; } else { sb[at] = v; }
}

// One 4 × 4 block of op(A) or op(B) whose stored rows run along m or n (A transposed, B not): for each of
// the block's four k, the four values at row (m or n) i .. i + 3, one vec4 load. `ld`, `offset`: the
// operand's; `extent`: its m or n; `slot`: the block's vec4 within a staged k, `stride`: vec4s per staged k.
fn stage_block(of_a: bool, offset: u32, ld: u32, extent: u32, i: u32, k0: u32, kb: u32, slot: u32, stride: u32) {
  for (var j = 0u; j < 4u; j++) {
    let kk = 4u * kb + j;
    put4(of_a, kk * stride + slot, load4(of_a, offset + (k0 + kk) * ld + i, i < extent && k0 + kk < params.k));
  }
}

// One 4 × 4 block whose stored rows run along k (A not transposed, B transposed): four vec4 loads of rows
// i .. i + 3 at k .. k + 3, turned in registers so that each staged vec4 holds one k.
fn stage_block_along_k(of_a: bool, offset: u32, ld: u32, extent: u32, i: u32, k: u32, kb: u32, slot: u32, stride: u32) {
  let live = k < params.k;
  let r0 = load4(of_a, offset + i * ld + k, live && i < extent);
  let r1 = load4(of_a, offset + (i + 1u) * ld + k, live && i + 1u < extent);
  let r2 = load4(of_a, offset + (i + 2u) * ld + k, live && i + 2u < extent);
  let r3 = load4(of_a, offset + (i + 3u) * ld + k, live && i + 3u < extent);
  put4(of_a, (4u * kb) * stride + slot, vec4f(r0.x, r1.x, r2.x, r3.x));
  put4(of_a, (4u * kb + 1u) * stride + slot, vec4f(r0.y, r1.y, r2.y, r3.y));
  put4(of_a, (4u * kb + 2u) * stride + slot, vec4f(r0.z, r1.z, r2.z, r3.z));
  put4(of_a, (4u * kb + 3u) * stride + slot, vec4f(r0.w, r1.w, r2.w, r3.w));
}

fn stage_vec4(li: u32, m0: u32, n0: u32, k0: u32) {
  // A in 4 × 4 blocks (rows m0 + 4mb.., k k0 + 4kb..); neighbouring invocations take neighbouring blocks
  // along the stored rows.
  let kbs = TK / 4u;
  let tm4 = WY * MV;
  for (var blk = li; blk < tm4 * kbs; blk += WG) {
    if (TRANS_A) {
      let mb = blk % tm4;
      let kb = blk / tm4;
      stage_block(true, params.a_offset, params.lda, params.m, m0 + 4u * mb, k0, kb, mb, tm4);
    } else {
      let kb = blk % kbs;
      let mb = blk / kbs;
      stage_block_along_k(true, params.a_offset, params.lda, params.m, m0 + 4u * mb, k0 + 4u * kb, kb, mb, tm4);
    }
  }
  for (var blk = li; blk < WX * kbs; blk += WG) {
    if (TRANS_B) {
      let kb = blk % kbs;
      let nb = blk / kbs;
      stage_block_along_k(false, params.b_offset, params.ldb, params.n, n0 + 4u * nb, k0 + 4u * kb, kb, nb, WX);
    } else {
      let nb = blk % WX;
      let kb = blk / WX;
      stage_block(false, params.b_offset, params.ldb, params.n, n0 + 4u * nb, k0, kb, nb, WX);
    }
  }
}

fn stage_scalar(li: u32, m0: u32, n0: u32, k0: u32) {
  // Neighbouring invocations read neighbouring addresses: along m (or n) where op(A) (op(B)) is stored
  // transposed, along k where it is not.
  let tm4 = WY * MV;
  for (var idx = li; idx < TK * tm4; idx += WG) {
    var kk = idx / tm4;
    var q = (idx % tm4) * 4u;
    if (!TRANS_A) { kk = idx % TK; q = (idx / TK) * 4u; }
    sa[kk * tm4 + q / 4u] = vec4f(load_a(m0 + q, k0 + kk), load_a(m0 + q + 1u, k0 + kk), load_a(m0 + q + 2u, k0 + kk), load_a(m0 + q + 3u, k0 + kk));
  }
  for (var idx = li; idx < TK * WX; idx += WG) {
    var kk = idx / WX;
    var q = (idx % WX) * 4u;
    if (TRANS_B) { kk = idx % TK; q = (idx / TK) * 4u; }
    sb[kk * WX + q / 4u] = vec4f(load_b(k0 + kk, n0 + q), load_b(k0 + kk, n0 + q + 1u), load_b(k0 + kk, n0 + q + 2u), load_b(k0 + kk, n0 + q + 3u));
  }
}

fn store(row: u32, col0: u32, v: vec4f) {
  if (row >= params.m) { return; }
  for (var j = 0u; j < 4u; j++) {
    let col = col0 + j;
    if (col < params.n) {
      let at = params.c_offset + row * params.ldc + col;
      var r = params.alpha * v[j];
      if (params.accumulate != 0u) { r += c[at]; }
      c[at] = r;
    }
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) li: u32) {
  let lx = li % WX;
  let ly = li / WX;
  let tm4 = WY * MV;
  let m0 = wg.y * 4u * tm4;
  let n0 = wg.x * 4u * WX;
  // Named accumulators, not an indexed array: CPU rasterisers do not unroll loops and would keep an
  // indexed array in memory. acc4..7 are the second row group (MV = 2).
  var acc0 = vec4f();
  var acc1 = vec4f();
  var acc2 = vec4f();
  var acc3 = vec4f();
  var acc4 = vec4f();
  var acc5 = vec4f();
  var acc6 = vec4f();
  var acc7 = vec4f();
  let tiles = (params.k + TK - 1u) / TK;
  for (var t = 0u; t < tiles; t++) {
    let k0 = t * TK;
    if (VEC4) { stage_vec4(li, m0, n0, k0); } else { stage_scalar(li, m0, n0, k0); }
    workgroupBarrier();
    // The last slice may be shallower (products over the adapter's rank are a few columns deep).
    let depth = min(TK, params.k - k0);
    if (MV == 2u) {
      for (var kk = 0u; kk < depth; kk++) {
        let at = kk * tm4 + 2u * ly;
        let av = sa[at];
        let aw = sa[at + 1u];
        let bv = sb[kk * WX + lx];
        acc0 += av.x * bv;
        acc1 += av.y * bv;
        acc2 += av.z * bv;
        acc3 += av.w * bv;
        acc4 += aw.x * bv;
        acc5 += aw.y * bv;
        acc6 += aw.z * bv;
        acc7 += aw.w * bv;
      }
    } else {
      for (var kk = 0u; kk < depth; kk++) {
        let av = sa[kk * tm4 + ly];
        let bv = sb[kk * WX + lx];
        acc0 += av.x * bv;
        acc1 += av.y * bv;
        acc2 += av.z * bv;
        acc3 += av.w * bv;
      }
    }
    workgroupBarrier();
  }
  let row = m0 + ly * 4u * MV;
  let col = n0 + lx * 4u;
  store(row, col, acc0);
  store(row + 1u, col, acc1);
  store(row + 2u, col, acc2);
  store(row + 3u, col, acc3);
  if (MV == 2u) {
    store(row + 4u, col, acc4);
    store(row + 5u, col, acc5);
    store(row + 6u, col, acc6);
    store(row + 7u, col, acc7);
  }
}
