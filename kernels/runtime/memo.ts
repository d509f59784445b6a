/**
 * `make` runs once per key (keys compared as Map compares them); later calls with that key return the
 * first result. For kernels and buffers made on first use and shared after: one variant per weight type,
 * quantization mode or input buffer.
 */
export function memoize<K, V>(make: (key: K) => V): (key: K) => V {
  const made = new Map<K, V>();
  return (key) => {
    let v = made.get(key);
    if (v === undefined) made.set(key, (v = make(key)));
    return v;
  };
}
