// RMSNorm for CPU adapters that writes its rows quantized to int8 blocks (put_q8_block,
// quantize-x-block.wgsl) for the Q8_0 products that read quantized x: the norm before the QKV and
// gate|up products, with no quantize pass of its own. The normed values are computed as in
// rmsnorm-serial-vec4.wgsl, so the bits equal that kernel's output quantized by quantize-x-q8.wgsl.
// Needs dim % 32 == 0 and x offsets and strides that are multiples of 4. Row r of xq starts at vec4
// r * (dim / 32) * 3.

// Bindings x, w, xq and x_row() from rmsnorm-io-q8.wgsl or rmsnorm-io-q8-gather.wgsl.

override WG: u32 = 16u;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let row = gid.x + gid.y * nwg.x * WG;
  if (row >= params.rows) { return; }
  let xb = x_base(row) / 4u;
  let wb = w_base(row) / 4u;
  let n = params.dim / 4u;
  var sum = vec4f();
  for (var i = 0u; i < n; i++) {
    let v = x[xb + i];
    sum += v * v;
  }
  let scale = inverseSqrt((sum.x + sum.y + sum.z + sum.w) / f32(params.dim) + params.eps);
  let blocks = params.dim / 32u;
  for (var b = 0u; b < blocks; b++) {
    var v: array<vec4f, 8>;
    for (var i = 0u; i < 8u; i++) { v[i] = x[xb + 8u * b + i] * scale * w[wb + 8u * b + i]; }
    put_q8_block((row * blocks + b) * 3u, v);
  }
}
