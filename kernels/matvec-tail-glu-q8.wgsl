// The tail of a gate|up product whose gated activation the down product reads as int8 blocks
// (matvec-tail.wgsl): swiglu-q8.wgsl's arithmetic, so the bits equal that pass's. One part per group of
// XQ_GROUP activations: its gate rows and its up rows come from 2 XQ_GROUP / TAIL_ROWS invocations
// (TAIL_ROWS weight rows each, a divisor of XQ_GROUP), and the last of them quantizes the group for every
// row of x, so the pass is spread over the invocations as the product is. The product's n rows are gate
// (0 .. tail_up - 1) then up, one dispatch; in row r of its y, gate values start at
// params.tail_in_offset + r * params.tail_in_stride and up values params.tail_up elements later,
// params.tail_n of each; row r of xq at vec4 r * (tail_n / 32) * 3.

override TAIL_ROWS: u32 = 8u;

@group(0) @binding(TAIL_BINDING_1) var<storage, read_write> xq: array<vec4u>;

var<private> tail_gate: u32;

fn x_value(i: u32) -> vec4f {
  let g = tail_in(tail_gate + 4u * i);
  return vec4f(act(g.x), act(g.y), act(g.z), act(g.w)) * tail_in(tail_gate + params.tail_up + 4u * i);
}

fn after_rows(nwg: vec3u, n0: u32) {
  if (params.tail_on == 0u || n0 >= params.n) { return; }
  let g = select(n0, n0 - params.tail_up, n0 >= params.tail_up) / XQ_GROUP;
  if (!tail_last(g, 2u * XQ_GROUP / TAIL_ROWS)) { return; }
  for (var r = 0u; r < params.t; r++) {
    tail_gate = params.tail_in_offset + r * params.tail_in_stride;
    put_xq_group(r * xq_row_vec4s(params.tail_n), g * (XQ_GROUP / 32u), g * (XQ_GROUP / 4u));
  }
}
