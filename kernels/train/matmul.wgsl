// C = alpha · op(A) · op(B) (+ C when accumulating), all f32, for training: op(A) is M × K, op(B) is K × N,
// either may be read transposed, so one kernel serves the forward products (X·Wᵀ), the input gradients
// (dY·W) and the weight gradients (Gᵀ·X). A workgroup computes a 32 × 32 tile of C from 16-deep slices of
// A and B staged in workgroup memory; each of its 64 invocations owns a 4 × 4 block of the tile.

struct Params {
  m: u32,
  n: u32,
  k: u32,
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

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

const TM = 32u;
const TN = 32u;
const TK = 16u;

// sa[kk * TM + mm] = op(A)[m0 + mm, k0 + kk]; sb[kk * TN + nn] = op(B)[k0 + kk, n0 + nn].
var<workgroup> sa: array<f32, 512>;
var<workgroup> sb: array<f32, 512>;

fn load_a(row: u32, col: u32) -> f32 {
  if (row >= params.m || col >= params.k) { return 0.0; }
  if (params.trans_a != 0u) { return a[params.a_offset + col * params.lda + row]; }
  return a[params.a_offset + row * params.lda + col];
}

fn load_b(row: u32, col: u32) -> f32 {
  if (row >= params.k || col >= params.n) { return 0.0; }
  if (params.trans_b != 0u) { return b[params.b_offset + col * params.ldb + row]; }
  return b[params.b_offset + row * params.ldb + col];
}

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let m0 = wg.y * TM;
  let n0 = wg.x * TN;
  var acc: array<vec4f, 4>;
  let tiles = (params.k + TK - 1u) / TK;
  for (var t = 0u; t < tiles; t++) {
    let k0 = t * TK;
    for (var e = 0u; e < 8u; e++) {
      let idx = li + e * 64u;
      // Walk memory contiguously: along k for an untransposed A (row-major M × K), along m otherwise.
      var kk: u32;
      var mm: u32;
      if (params.trans_a != 0u) { kk = idx / TM; mm = idx % TM; } else { mm = idx / TK; kk = idx % TK; }
      sa[kk * TM + mm] = load_a(m0 + mm, k0 + kk);
      var kb: u32;
      var nn: u32;
      if (params.trans_b != 0u) { nn = idx / TK; kb = idx % TK; } else { kb = idx / TN; nn = idx % TN; }
      sb[kb * TN + nn] = load_b(k0 + kb, n0 + nn);
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let ab = kk * TM + lid.y * 4u;
      let av = vec4f(sa[ab], sa[ab + 1u], sa[ab + 2u], sa[ab + 3u]);
      let bb = kk * TN + lid.x * 4u;
      let bv = vec4f(sb[bb], sb[bb + 1u], sb[bb + 2u], sb[bb + 3u]);
      acc[0] += av.x * bv;
      acc[1] += av.y * bv;
      acc[2] += av.z * bv;
      acc[3] += av.w * bv;
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < 4u; i++) {
    let row = m0 + lid.y * 4u + i;
    if (row >= params.m) { continue; }
    for (var j = 0u; j < 4u; j++) {
      let col = n0 + lid.x * 4u + j;
      if (col >= params.n) { continue; }
      let at = params.c_offset + row * params.ldc + col;
      var v = params.alpha * acc[i][j];
      if (params.accumulate != 0u) { v += c[at]; }
      c[at] = v;
    }
  }
}
