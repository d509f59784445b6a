// RMSNorm in place (y is x): WebGPU forbids binding one buffer both read-only and writable in a dispatch,
// and normalizing rows where they lie saves a copy. Safe because each row is read whole before any
// invocation writes it (serial: one invocation per row; workgroup: the barriers of the reduction).
@group(0) @binding(0) var<storage, read_write> x: array<XT>;
@group(0) @binding(1) var<storage, read> w: array<XT>;

fn y_put(i: u32, v: XT) {
  x[i] = v;
}

fn x_row(row: u32) -> u32 {
  return row;
}
