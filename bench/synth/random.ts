/** Seeded random numbers for synthetic weights: the same seed and tensor name always give the same values. */

/** FNV-1a of a string, to give every tensor its own stream. */
function hashString(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** xoshiro128** over 32-bit state: fast in JS (no BigInt) and good enough for weights. */
export class Rng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number, stream = '') {
    // splitmix32 expands (seed, stream) into a non-zero state.
    let x = (seed ^ hashString(stream)) >>> 0;
    const next = () => {
      x = (x + 0x9e3779b9) >>> 0;
      let z = x;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next() || 1;
  }

  /** Uniform 32-bit unsigned integer. */
  u32(): number {
    const r = Math.imul(rotl(Math.imul(this.b, 5), 7), 9) >>> 0;
    const t = this.b << 9;
    this.c ^= this.a;
    this.d ^= this.b;
    this.b ^= this.c;
    this.a ^= this.d;
    this.c ^= t;
    this.d = rotl(this.d, 11);
    return r;
  }

  /** Uniform in (0, 1): never 0, so log() below stays finite. */
  uniform(): number {
    return (this.u32() + 0.5) / 4294967296;
  }

  /**
   * Fills `out` with normal(0, std) values, two per 32-bit draw from a table of normal samples: 10x faster than
   * Box–Muller, which matters at a billion weights, and the 65,536 levels are finer than any 8-bit quantization.
   */
  fillNormal(out: Float32Array, std: number): void {
    const table = normalTable();
    const n = out.length;
    let i = 0;
    for (; i + 1 < n; i += 2) {
      const r = this.u32();
      out[i] = std * table[r & 0xffff];
      out[i + 1] = std * table[r >>> 16];
    }
    if (i < n) out[i] = std * table[this.u32() & 0xffff];
  }
}

let table: Float32Array | undefined;

/** 32,768 Box–Muller samples and their negatives, so the mean is exactly 0. */
function normalTable(): Float32Array {
  if (table) return table;
  const rng = new Rng(0x6e6f726d, 'normal-table');
  const t = new Float32Array(1 << 16);
  for (let i = 0; i < t.length; i += 2) {
    const v = Math.sqrt(-2 * Math.log(rng.uniform())) * Math.cos(2 * Math.PI * rng.uniform());
    t[i] = v;
    t[i + 1] = -v;
  }
  return (table = t);
}

function rotl(x: number, k: number): number {
  return (x << k) | (x >>> (32 - k));
}
