// Dispatch-cost probe: one invocation writes one word. Doing almost nothing, its time is what the
// adapter charges per dispatch; the word lets a test see that every dispatch really ran.

struct Params {
  index: u32,
  value: u32,
}

@group(0) @binding(0) var<storage, read_write> out: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

@compute @workgroup_size(1)
fn main() {
  out[params.index] = params.value;
}
