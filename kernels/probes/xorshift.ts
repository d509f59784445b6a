/** A seeded xorshift32 stream of u32 words: the probes' inputs, so every word differs and a run reproduces. */
export function xorshift32(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}
