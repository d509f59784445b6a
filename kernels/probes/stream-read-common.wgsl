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

// The XOR of invocation `inv`'s contiguous range, four loads per iteration into independent
// accumulators, so loads need not wait for the previous XOR. ld(i), vec4 i of the source, comes with the
// layout's file (stream-read.wgsl, stream-read-weights.wgsl).
fn xor_range_x4(inv: u32) -> u32 {
  let start = min(inv * params.per, params.n);
  let end = min(start + params.per, params.n);
  var a0 = vec4u(0u);
  var a1 = vec4u(0u);
  var a2 = vec4u(0u);
  var a3 = vec4u(0u);
  var i = start;
  for (; i + 4u <= end; i += 4u) {
    a0 ^= ld(i);
    a1 ^= ld(i + 1u);
    a2 ^= ld(i + 2u);
    a3 ^= ld(i + 3u);
  }
  for (; i < end; i++) {
    a0 ^= ld(i);
  }
  return fold(a0 ^ a1 ^ a2 ^ a3);
}
