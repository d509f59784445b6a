// A pass folded into the end of a CPU rasteriser's decode product (matvec-rows*.wgsl), so the step saves
// its dispatch: on llvmpipe a dispatch costs 25-60 µs, nearly all of it waking the rasteriser's threads,
// and a decode step of SmolLM2-135M was 275 of them. Each invocation, after its stores, adds one to a
// counter of the part of the pass its rows feed; the one that brings a counter to its last count knows
// every store that part reads is done, runs that part, and resets the counter for the next product that
// uses it. No invocation waits for another. The add must order the stores before it, which WGSL's relaxed
// atomics do not promise: llvmpipe compiles it as a sequentially consistent read-modify-write (Mesa's
// gallivm), so tails are built only where GpuCaps.orderedAtomics says so.
//
// after_rows(nwg, n0), with n0 the invocation's first row, comes with each tail (matvec-tail-norm-q8.wgsl:
// one part, the whole pass; matvec-tail-glu-q8.wgsl: one part per group of quantized values;
// matvec-tail-rope-kv.wgsl: one part per head), or from matvec-tail-none.wgsl. The tail's bindings start at TAIL_BINDING: the counters, then its own.
// Dispatches with params.tail_on == 0 skip all of it.

@group(0) @binding(TAIL_BINDING) var<storage, read_write> tail_count: array<atomic<u32>>;

// Whether this invocation brought counter i to `count`; it then owns part i and the counter is reset.
fn tail_last(i: u32, count: u32) -> bool {
  if (atomicAdd(&tail_count[i], 1u) != count - 1u) { return false; }
  atomicStore(&tail_count[i], 0u);
  return true;
}

// tail_in(e) and tail_out(e, v), four consecutive values of the product's y from element e, come from
// matvec-tail-y.wgsl (y as f32s) or matvec-tail-y4.wgsl (y as vec4s, e a multiple of 4).
