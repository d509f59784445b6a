// The tail of a product whose output rows (the residual stream) the next products read through RMSNorm
// as int8 blocks (matvec-tail.wgsl): rmsnorm-serial-q8.wgsl's arithmetic, in the same order, so the bits
// equal that pass's. The pass is spread over the product's invocations as the gated tail's is
// (matvec-tail-glu-q8.wgsl): a group of XQ_GROUP values comes from XQ_GROUP / TAIL_ROWS invocations, and
// the last of them quantizes the group for every row of x with its scales unfinished (xq_deferred: the
// norm's factor is not known until every group is done) and leaves the group's sum of squares; the
// invocation that finishes the last group adds the sums up and finishes every block's scale. Run by one
// invocation, the whole norm took ~20 µs after each of a decode step's O and down products on llvmpipe
// (SmolLM2-135M: 1.2 ms of a 26 ms step), the other thread idle.
//
// The product's n rows are the norm's params.tail_n values, one dispatch (checkTailParams). Its y is the
// input: row r's values start at element params.tail_in_offset + r * params.tail_in_stride; row r of xq at
// vec4 r * xq_row_vec4s(tail_n). Counter words (tailCounterWords): one a group, one for the groups done,
// then each row's sums of squares a group (f32 bits), which the last invocation zeroes again.

override TAIL_ROWS: u32 = 8u;

@group(0) @binding(TAIL_BINDING_1) var<storage, read> tail_w: array<vec4f>;
@group(0) @binding(TAIL_BINDING_2) var<storage, read_write> xq: array<vec4u>;

var<private> tail_row: u32;

fn x_value(i: u32) -> vec4f {
  return tail_in(tail_row + 4u * i) * tail_w[i];
}

fn after_rows(nwg: vec3u, n0: u32) {
  if (params.tail_on == 0u || n0 >= params.n) { return; }
  let groups = params.tail_n / XQ_GROUP;
  let per = XQ_GROUP / 4u;
  let g = n0 / XQ_GROUP;
  if (!tail_last(g, XQ_GROUP / TAIL_ROWS)) { return; }
  xq_deferred = true;
  for (var r = 0u; r < params.t; r++) {
    tail_row = params.tail_in_offset + r * params.tail_in_stride;
    var sum = vec4f();
    for (var i = 0u; i < per; i++) {
      let v = tail_in(tail_row + 4u * (g * per + i));
      sum += v * v;
    }
    atomicStore(&tail_count[groups + 1u + r * groups + g], bitcast<u32>(sum.x + sum.y + sum.z + sum.w));
    put_xq_group(r * xq_row_vec4s(params.tail_n), g * (XQ_GROUP / 32u), g * per);
  }
  if (!tail_last(groups, groups)) { return; }
  for (var r = 0u; r < params.t; r++) {
    var total = 0.0;
    for (var h = 0u; h < groups; h++) {
      let i = groups + 1u + r * groups + h;
      total += bitcast<f32>(atomicLoad(&tail_count[i]));
      atomicStore(&tail_count[i], 0u);
    }
    let s = inverseSqrt(total / f32(params.tail_n) + params.tail_eps);
    let row = r * xq_row_vec4s(params.tail_n);
    for (var b = 0u; b < params.tail_n / 32u; b++) { finish_xq_scale(row, b, s); }
  }
}
