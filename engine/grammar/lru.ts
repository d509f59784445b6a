/** A size-bounded map that forgets the least recently used entry first. */
export class LruCache<K, V> {
  private readonly map = new Map<K, V>();

  constructor(
    readonly capacity: number,
    /** Called with each entry pushed out (to free what it holds). */
    private readonly onEvict?: (value: V, key: K) => void,
  ) {
    if (!(Number.isInteger(capacity) && capacity >= 1)) throw new RangeError(`LRU capacity must be an integer ≥ 1 (got ${capacity})`);
  }

  get size(): number {
    return this.map.size;
  }

  get(key: K): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    // Map iteration order is insertion order: re-inserting marks the entry as most recent.
    this.map.delete(key);
    this.map.set(key, v);
    return v;
  }

  set(key: K, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    while (this.map.size > this.capacity) {
      const [k, v] = this.map.entries().next().value as [K, V];
      this.map.delete(k);
      this.onEvict?.(v, k);
    }
  }

  delete(key: K): boolean {
    return this.map.delete(key);
  }

  keys(): IterableIterator<K> {
    return this.map.keys();
  }
}
