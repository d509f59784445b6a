// A Q8_0-style prefill product on int8 subgroup matrices: y[t, n] = sum over blocks b of
// dw[n, b] dx[t, b] (sum over the block's 32 k of w[n, k] x[t, k]), w and x int8 (x quantized before,
// once a step, as llama.cpp does), a scale a block of 32 for each row and token. A workgroup is one
// subgroup of 32 computing 32 rows x 32 tokens: per block four 16 x 16 x 32 multiplies straight from
// storage (w's rows and x's tokens k bytes apart), their i32 results through workgroup memory, where
// each invocation takes one token's 32 rows, scales them by both blocks' steps and adds them to its f32
// sums: the scales change every block, and a matrix's elements are not addressable in registers.
// LOAD_LEFT, LOAD_RIGHT and STORE as in subgroup-matrix-hello.wgsl. Shapes: n, t multiples of 32, k of 32.
enable subgroups;
enable chromium_experimental_subgroup_matrix;

struct Params {
  n: u32,
  k: u32,
  t: u32,
  pad: u32,
}

@group(0) @binding(0) var<storage, read> w: array<i32>;
@group(0) @binding(1) var<storage, read> dw: array<f32>;
@group(0) @binding(2) var<storage, read> x: array<i32>;
@group(0) @binding(3) var<storage, read> dx: array<f32>;
@group(0) @binding(4) var<storage, read_write> y: array<f32>;
@group(0) @binding(5) var<uniform> params: Params;

// Four 16 x 16 results, 272 words apart so the two token halves of a row fall on different banks.
const REGION: u32 = 272u;
var<workgroup> scratch: array<i32, 1088>;

@compute @workgroup_size(32)
fn main(@builtin(workgroup_id) wg: vec3u, @builtin(local_invocation_index) lid: u32) {
  let n0 = wg.x * 32u;
  let t0 = wg.y * 32u;
  let k = params.k;
  let nb = k / 32u;
  // This invocation's token (of the 32) and where its column lies in the results.
  let half = lid / 16u;
  let col = lid % 16u;
  let tok = t0 + lid;
  var acc: array<f32, 32>;
  for (var b = 0u; b < nb; b++) {
    let a0 = LOAD_LEFT(w, n0 * k + b * 32u, k);
    let a1 = LOAD_LEFT(w, (n0 + 16u) * k + b * 32u, k);
    let b0 = LOAD_RIGHT(x, t0 * k + b * 32u, k);
    let b1 = LOAD_RIGHT(x, (t0 + 16u) * k + b * 32u, k);
    STORE(scratch, 0u, subgroupMatrixMultiply<i32>(a0, b0), 16u);
    STORE(scratch, REGION, subgroupMatrixMultiply<i32>(a0, b1), 16u);
    STORE(scratch, 2u * REGION, subgroupMatrixMultiply<i32>(a1, b0), 16u);
    STORE(scratch, 3u * REGION, subgroupMatrixMultiply<i32>(a1, b1), 16u);
    workgroupBarrier();
    let sx = dx[tok * nb + b];
    for (var r = 0u; r < 16u; r++) {
      let s0 = f32(scratch[half * REGION + r * 16u + col]);
      let s1 = f32(scratch[(2u + half) * REGION + r * 16u + col]);
      acc[r] = fma(s0, dw[(n0 + r) * nb + b] * sx, acc[r]);
      acc[16u + r] = fma(s1, dw[(n0 + 16u + r) * nb + b] * sx, acc[16u + r]);
    }
    workgroupBarrier();
  }
  for (var r = 0u; r < 32u; r++) {
    y[tok * params.n + n0 + r] = acc[r];
  }
}
