// RMSNorm of picked rows: y[r] = norm(x[idx[r]]). The output head's input (the last token of each
// sequence) is gathered and normed in one pass instead of a gather pass and a norm pass.
@group(0) @binding(0) var<storage, read> x: array<XT>;
@group(0) @binding(1) var<storage, read> w: array<XT>;
@group(0) @binding(2) var<storage, read_write> y: array<XT>;
@group(0) @binding(3) var<storage, read> idx: array<u32>;

fn x_row(row: u32) -> u32 {
  return idx[row];
}

fn y_put(i: u32, v: XT) {
  y[i] = v;
}
