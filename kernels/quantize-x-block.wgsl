// Activations quantized to int8 the way llama.cpp's CPU backend quantizes them for its products, into
// blocks of 32 (quantize-x.ts's layout, q8BlockLayout: a row's blocks in groups of 4, each group its
// blocks' quants, two vec4s a block, then one vec4 of their 4 scales), in one of two modes (XQ_GROUP, a
// pipeline constant):
//   32: quantize_row_q8_0 (Q8_0 and Q4_0 weights): d = max|x| / 127 kept as f16, q = round-half-even(x / d)
//       with the f32 d;
//   256: quantize_row_q8_K (K-quant weights): the 256 values share iscale = -127 / (the value of largest
//       magnitude, first in order), q = min(127, round-half-even(iscale x)), d = 1 / iscale in f32,
//       written with each of the group's 8 blocks.
// Shared by quantize-x-q8.wgsl, rmsnorm-serial-q8.wgsl and swiglu-q8.wgsl (joined with
// quantize-q8-math.wgsl: Q8_BLOCK_WGSL in quantize-x.ts), so x quantized after a pass and x quantized by
// that pass itself are the same bits. Each defines x_value(i), vec4 i of the values being quantized.
//
// RMSNorm's passes (rmsnorm-serial-q8.wgsl, the norm tail of a decode product: matvec-tail-norm-q8.wgsl)
// quantize y * w and put the norm's factor s on the block scales instead of on every value (xq_factor):
// a block's quants depend only on the ratios of its values, so s is needed only once the scales are
// written, and a tail can quantize each block as soon as its rows are done, before s is known
// (xq_deferred: the f32 step written as it is, finished by finish_xq_scale once s is).

override XQ_GROUP: u32 = 32u;

// The factor on the scales put_xq_group writes, and whether it writes them unfinished.
var<private> xq_factor: f32 = 1.0;
var<private> xq_deferred: bool = false;

// The scale a block is read with, from its f32 step (q8_0: max / 127; q8_K: 1 / iscale): times
// `factor`, kept as f16 in q8_0 mode (llama.cpp's block_q8_0.d), as f32 in q8_K mode.
fn xq_scale(step: f32, factor: f32) -> f32 {
  let d = step * factor;
  return select(d, f16_kept(d), XQ_GROUP == 32u);
}

fn xq_written(step: f32) -> f32 {
  return select(xq_scale(step, xq_factor), step, xq_deferred);
}

// Block b's scale, written unfinished (xq_deferred), finished with `factor`.
fn finish_xq_scale(row: u32, b: u32, factor: f32) {
  let i = row + (b >> 2u) * 9u + 8u;
  let c = b & 3u;
  xq[i][c] = bitcast<u32>(xq_scale(bitcast<f32>(xq[i][c]), factor));
}

// vec4s of a quantized row of k values (q8RowVec4s).
fn xq_row_vec4s(k: u32) -> u32 {
  return (k + 127u) / 128u * 9u;
}

// Block b of the row starting at vec4 `row`.
fn put_q8_quants(row: u32, b: u32, id: f32, v: array<vec4f, 8>, d: f32) {
  let group = row + (b >> 2u) * 9u;
  let o = group + (b & 3u) * 2u;
  let q = q8_pack(v, id);
  xq[o] = q.lo;
  xq[o + 1u] = q.hi;
  xq[group + 8u][b & 3u] = bitcast<u32>(d);
}

// The 8 vec4s of one block, x_value(v0) .. x_value(v0 + 7).
fn q8_values(v0: u32) -> array<vec4f, 8> {
  var v: array<vec4f, 8>;
  for (var i = 0u; i < 8u; i++) { v[i] = x_value(v0 + i); }
  return v;
}

// Quantizes XQ_GROUP values, x_value(v0) .. x_value(v0 + XQ_GROUP / 4 - 1), into the blocks from block
// b0 of the row starting at vec4 `row`. A block's values are computed once; a 256-value group's twice
// (its maximum first: 64 vec4s would not stay in registers).
fn put_xq_group(row: u32, b0: u32, v0: u32) {
  if (XQ_GROUP == 32u) {
    let v = q8_values(v0);
    let s = q8_0_step(v);
    put_q8_quants(row, b0, s.x, v, xq_written(s.y));
    return;
  }
  var amax = 0.0;
  var signed = 0.0;
  for (var i = 0u; i < XQ_GROUP / 4u; i++) {
    let v = x_value(v0 + i);
    for (var c = 0u; c < 4u; c++) {
      if (abs(v[c]) > amax) {
        amax = abs(v[c]);
        signed = v[c];
      }
    }
  }
  let iscale = select(0.0, -127.0 / signed, amax != 0.0);
  let d = xq_written(select(0.0, 1.0 / iscale, amax != 0.0));
  for (var b = 0u; b < XQ_GROUP / 32u; b++) { put_q8_quants(row, b0 + b, iscale, q8_values(v0 + 8u * b), d); }
}
