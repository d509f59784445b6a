// C = alpha · op(A) · op(B) (+ C when accumulating), all f32, for training: op(A) is M × K, op(B) is K × N,
// either may be read transposed, so one kernel serves the forward products (X·Wᵀ), the input gradients
// (dY·W) and the weight gradients (Gᵀ·X). A workgroup computes a 32 × 32 tile of C from 16-deep slices of
// A and B staged in workgroup memory; each of its 64 invocations owns a 4 × 4 block of the tile.

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

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> c: array<f32>;
@group(1) @binding(0) var<uniform> params: Params;

const TM = 32u;
const TN = 32u;
const TK = 16u;

// sa[kk * 8 + i] = op(A)[m0 + 4i .. m0 + 4i + 3, k0 + kk]; sb[kk * 8 + j] = op(B)[k0 + kk, n0 + 4j .. n0 + 4j + 3]:
// vec4s, so the inner loop reads two values from workgroup memory per 16 multiply-adds.
var<workgroup> sa: array<vec4f, 128>;
var<workgroup> sb: array<vec4f, 128>;

// Transposes are pipeline constants: the loads' branches then vanish when the shader is compiled, which
// matters on CPU rasterisers, where every instruction of the staging loop runs per element.
override TRANS_A: bool = false;
override TRANS_B: bool = false;

fn load_a(row: u32, col: u32) -> f32 {
  if (row >= params.m || col >= params.k) { return 0.0; }
  if (TRANS_A) { return a[params.a_offset + col * params.lda + row]; }
  return a[params.a_offset + row * params.lda + col];
}

fn load_b(row: u32, col: u32) -> f32 {
  if (row >= params.k || col >= params.n) { return 0.0; }
  if (TRANS_B) { return b[params.b_offset + col * params.ldb + row]; }
  return b[params.b_offset + row * params.ldb + col];
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

@compute @workgroup_size(8, 8)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let m0 = wg.y * TM;
  let n0 = wg.x * TN;
  // Four named accumulators, not an indexed array: CPU rasterisers do not unroll loops and would keep
  // an indexed array in memory.
  var acc0 = vec4f();
  var acc1 = vec4f();
  var acc2 = vec4f();
  var acc3 = vec4f();
  let tiles = (params.k + TK - 1u) / TK;
  for (var t = 0u; t < tiles; t++) {
    let k0 = t * TK;
    for (var e = 0u; e < 2u; e++) {
      let idx = li + e * 64u;
      // Neighbouring invocations read neighbouring addresses: along m (or n) where op(A) (op(B)) is stored
      // transposed, along k where it is not.
      var kk = idx / 8u;
      var q = (idx % 8u) * 4u;
      if (!TRANS_A) { kk = idx % TK; q = (idx / TK) * 4u; }
      sa[kk * 8u + q / 4u] = vec4f(load_a(m0 + q, k0 + kk), load_a(m0 + q + 1u, k0 + kk), load_a(m0 + q + 2u, k0 + kk), load_a(m0 + q + 3u, k0 + kk));
      kk = idx / 8u;
      q = (idx % 8u) * 4u;
      if (TRANS_B) { kk = idx % TK; q = (idx / TK) * 4u; }
      sb[kk * 8u + q / 4u] = vec4f(load_b(k0 + kk, n0 + q), load_b(k0 + kk, n0 + q + 1u), load_b(k0 + kk, n0 + q + 2u), load_b(k0 + kk, n0 + q + 3u));
    }
    workgroupBarrier();
    for (var kk = 0u; kk < TK; kk++) {
      let av = sa[kk * 8u + lid.y];
      let bv = sb[kk * 8u + lid.x];
      acc0 += av.x * bv;
      acc1 += av.y * bv;
      acc2 += av.z * bv;
      acc3 += av.w * bv;
    }
    workgroupBarrier();
  }
  let row = m0 + lid.y * 4u;
  let col = n0 + lid.x * 4u;
  store(row, col, acc0);
  store(row + 1u, col, acc1);
  store(row + 2u, col, acc2);
  store(row + 3u, col, acc3);
}
