// RMSNorm from x into a separate y.
// XT: the element type each kernel reads and writes (f32, or vec4f in rmsnorm-serial-vec4.wgsl).
@group(0) @binding(0) var<storage, read> x: array<XT>;
@group(0) @binding(1) var<storage, read> w: array<XT>;
@group(0) @binding(2) var<storage, read_write> y: array<XT>;

fn y_put(i: u32, v: XT) {
  y[i] = v;
}

fn x_row(row: u32) -> u32 {
  return row;
}
