// Prefetch for the CPU rasterisers' decode products (matvec-rows*.wgsl): each invocation, once its own
// rows are done, reads one word of each 64-byte cache line in its share of the next product's weights,
// so that product finds them in the CPU's cache. A decode step is a chain of products each too short for
// the CPU's own prefetchers to reach full speed (a SmolLM2-135M step's 120 products streamed 2.7 GB/s
// against 6.3 for one long product); loading a cache line costs a sixteenth of what decoding it does.
// The next weights are bound after the product's other buffers (PREFETCH_BINDING); a 16-byte buffer
// holds no whole line and prefetches nothing.

@group(0) @binding(PREFETCH_BINDING) var<storage, read> next_w: array<vec4u>;

const LINE_VEC4S = 4u;

// Invocation i of `invocations`: the XOR of the words read, for keep_loads().
fn prefetch_next(i: u32, invocations: u32) -> u32 {
  let lines = arrayLength(&next_w) / LINE_VEC4S;
  let per = (lines + invocations - 1u) / invocations;
  let start = min(i * per, lines);
  let end = min(start + per, lines);
  var acc = 0u;
  for (var l = start; l < end; l++) {
    acc ^= next_w[l * LINE_VEC4S].x;
  }
  return acc;
}
