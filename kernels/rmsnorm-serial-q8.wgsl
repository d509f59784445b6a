// RMSNorm for CPU adapters that writes its rows quantized to int8 blocks (put_xq_group,
// quantize-x-block.wgsl) for the products that read quantized x: the norm before the QKV and
// gate|up products, with no quantize pass of its own. Each block quantizes x * w and takes the norm's
// factor on its scale (xq_factor), as the norm tail of a decode product does (matvec-tail-norm-q8.wgsl),
// whose bits these are: the sum of squares goes group by group of XQ_GROUP values (each group's sum of
// its vec4s, then the groups in order), the order in which the tail adds its groups' partial sums.
// Needs dim % XQ_GROUP == 0 and x offsets and strides that are multiples of 4. Row r of xq starts at vec4
// r * (dim / 32) * 3.

// Bindings x, w, xq and x_row() from rmsnorm-io-q8.wgsl or rmsnorm-io-q8-gather.wgsl.

override WG: u32 = 16u;

var<private> src_row: u32;
var<private> weight_row: u32;

fn x_value(i: u32) -> vec4f {
  return x[src_row + i] * w[weight_row + i];
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= params.rows) { return; }
  src_row = x_base(row) / 4u;
  weight_row = w_base(row) / 4u;
  let groups = params.dim / XQ_GROUP;
  let per = XQ_GROUP / 4u;
  var total = 0.0;
  for (var g = 0u; g < groups; g++) {
    var sum = vec4f();
    for (var i = 0u; i < per; i++) {
      let v = x[src_row + g * per + i];
      sum += v * v;
    }
    total += sum.x + sum.y + sum.z + sum.w;
  }
  xq_factor = inverseSqrt(total / f32(params.dim) + params.eps);
  for (var g = 0u; g < groups; g++) {
    put_xq_group(row * xq_row_vec4s(params.dim), g * (XQ_GROUP / 32u), g * per);
  }
}
