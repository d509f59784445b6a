// RMSNorm from x into a separate y.
@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read_write> y: array<f32>;

fn y_put(i: u32, v: f32) {
  y[i] = v;
}

fn x_row(row: u32) -> u32 {
  return row;
}
