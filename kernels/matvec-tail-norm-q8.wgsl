// The tail of a product whose output rows (the residual stream) the next products read through RMSNorm
// as int8 blocks (matvec-tail.wgsl): rmsnorm-serial-q8.wgsl's arithmetic, in the same order, so the bits
// equal that pass's. A norm needs its whole row, so the part is the whole pass: the dispatch's last
// invocation runs it alone. The product's y is its input: row r's params.tail_n values start at element
// params.tail_in_offset + r * params.tail_in_stride; row r of xq at vec4 r * (tail_n / 32) * 3.

@group(0) @binding(TAIL_BINDING_1) var<storage, read> tail_w: array<vec4f>;
@group(0) @binding(TAIL_BINDING_2) var<storage, read_write> xq: array<vec4u>;

var<private> tail_row: u32;
var<private> tail_scale: f32;

fn x_value(i: u32) -> vec4f {
  return tail_in(tail_row + 4u * i) * tail_scale * tail_w[i];
}

fn after_rows(nwg: vec3u, n0: u32) {
  if (params.tail_on != 0u && tail_last(0u, nwg.x * nwg.y * nwg.z * WG)) { tail(); }
}

fn tail() {
  let n = params.tail_n / 4u;
  let groups = params.tail_n / XQ_GROUP;
  for (var r = 0u; r < params.t; r++) {
    tail_row = params.tail_in_offset + r * params.tail_in_stride;
    var sum = vec4f();
    for (var i = 0u; i < n; i++) {
      let v = tail_in(tail_row + 4u * i);
      sum += v * v;
    }
    tail_scale = inverseSqrt((sum.x + sum.y + sum.z + sum.w) / f32(params.tail_n) + params.tail_eps);
    for (var g = 0u; g < groups; g++) {
      put_xq_group(r * xq_row_vec4s(params.tail_n), g * (XQ_GROUP / 32u), g * (XQ_GROUP / 4u));
    }
  }
}
