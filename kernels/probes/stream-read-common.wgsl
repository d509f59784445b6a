// Streaming-read probe. Every vec4u of `src` is XORed into one word per invocation: the result depends
// on every word read, so no load can be dropped, and the XOR of all outputs equals the XOR of all input
// words whichever layout split the work.

struct Params {
  // vec4s in src.
  n: u32,
  // vec4s each invocation reads (contiguous layouts).
  per: u32,
  // Invocations in the dispatch (the grid-stride layout's stride).
  invocations: u32,
}

override WG: u32 = 64u;

@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(1) @binding(0) var<uniform> params: Params;

fn fold(v: vec4u) -> u32 {
  return v.x ^ v.y ^ v.z ^ v.w;
}
