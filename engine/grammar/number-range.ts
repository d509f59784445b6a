/**
 * EBNF for JSON numbers within bounds. xgrammar 0.1.27 gets these wrong: a fractional bound turns its
 * "." into "any character" (minimum 0.5 allows `0x5`), and `maximum: 100` allows `100.5`. We write the
 * grammar ourselves, exactly, with BigInt arithmetic on decimal digits.
 *
 * Numbers are written as an integer part and, for `number`, an optional fraction of 1..`fractionDigits`
 * digits (never exponents): every string the grammar allows is a canonical JSON number inside the bounds.
 * Values that need more fraction digits than that cannot be produced (a bound with more digits raises
 * the count, up to MAX_FRACTION_DIGITS; beyond that bounds are rounded inward).
 */

export interface NumberBounds {
  integer: boolean;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
}

/** Fraction digits offered when the bounds have fewer (xgrammar's own number grammar also stops at 6). */
export const DEFAULT_FRACTION_DIGITS = 6;
const MAX_FRACTION_DIGITS = 12;

interface Decimal {
  /** value = mantissa / 10^scale */
  mantissa: bigint;
  scale: number;
}

function toDecimal(x: number): Decimal {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(x));
  if (!m) throw new RangeError(`${x} is not a finite number`);
  const frac = m[3] ?? '';
  let mantissa = BigInt(m[2] + frac);
  let scale = frac.length - Number(m[4] ?? 0);
  if (scale < 0) {
    mantissa *= 10n ** BigInt(-scale);
    scale = 0;
  }
  return { mantissa: m[1] === '-' ? -mantissa : mantissa, scale };
}

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** floor(a / b) and ceil(a / b) for b > 0. */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a < 0n ? q - 1n : q;
}
function ceilDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && a > 0n ? q + 1n : q;
}

/** Smallest M with M / 10^k above the bound (≥, or > when exclusive). */
function lowest(bound: Decimal, k: number, exclusive: boolean): bigint {
  if (k >= bound.scale) {
    const exact = bound.mantissa * pow10(k - bound.scale);
    return exclusive ? exact + 1n : exact;
  }
  const d = pow10(bound.scale - k);
  const c = ceilDiv(bound.mantissa, d);
  return exclusive && c * d === bound.mantissa ? c + 1n : c;
}

function highest(bound: Decimal, k: number, exclusive: boolean): bigint {
  if (k >= bound.scale) {
    const exact = bound.mantissa * pow10(k - bound.scale);
    return exclusive ? exact - 1n : exact;
  }
  const d = pow10(bound.scale - k);
  const f = floorDiv(bound.mantissa, d);
  return exclusive && f * d === bound.mantissa ? f - 1n : f;
}

/**
 * One character position: a set of characters (bits 0-9 digits, 10 "-", 11 "."), or `star` for any number
 * of further digits.
 */
interface Atom {
  chars: number;
  star?: boolean;
}

const DIGITS = 0x3ff;
const MINUS = 1 << 10;
const DOT = 1 << 11;
const digitRange = (a: number, b: number): Atom => ({ chars: (((1 << (b + 1)) - 1) & ~((1 << a) - 1)) & DIGITS });
const ANY_DIGIT: Atom = { chars: DIGITS };

/** Digit strings of one fixed width with values in [lo, hi] (both given zero-padded to that width). */
function fixedWidth(lo: string, hi: string): Atom[][] {
  if (lo.length === 0) return [[]];
  const a = Number(lo[0]);
  const b = Number(hi[0]);
  const restLo = lo.slice(1);
  const restHi = hi.slice(1);
  if (a === b) return fixedWidth(restLo, restHi).map((s) => [digitRange(a, a), ...s]);
  const n = restLo.length;
  const out: Atom[][] = [];
  let from = a;
  let to = b;
  if (!/^0*$/.test(restLo)) {
    out.push(...fixedWidth(restLo, '9'.repeat(n)).map((s) => [digitRange(a, a), ...s]));
    from = a + 1;
  }
  const upper: Atom[][] = [];
  if (!/^9*$/.test(restHi)) {
    upper.push(...fixedWidth('0'.repeat(n), restHi).map((s) => [digitRange(b, b), ...s]));
    to = b - 1;
  }
  if (from <= to) out.push([digitRange(from, to), ...Array<Atom>(n).fill(ANY_DIGIT)]);
  out.push(...upper);
  return out;
}

/**
 * Digit strings for lo ≤ M ≤ hi (hi undefined: no limit) that read as a number with `k` fraction digits:
 * at least k+1 digits (zero-padded), no leading zero before the last k+1.
 */
function nonNegative(lo: bigint, hi: bigint | undefined, k: number): Atom[][] {
  if (hi !== undefined && hi < lo) return [];
  const minWidth = Math.max(k + 1, lo.toString().length);
  const maxWidth = hi === undefined ? minWidth : Math.max(minWidth, hi.toString().length);
  const out: Atom[][] = [];
  for (let w = minWidth; w <= maxWidth; w++) {
    const from = w === minWidth ? lo : pow10(w - 1);
    const to = hi === undefined || hi > pow10(w) - 1n ? pow10(w) - 1n : hi;
    if (from > to) continue;
    out.push(...fixedWidth(from.toString().padStart(w, '0'), to.toString().padStart(w, '0')));
  }
  if (hi === undefined) {
    // Any wider number: a non-zero digit, then at least minWidth more digits.
    out.push([digitRange(1, 9), ...Array<Atom>(minWidth - k).fill(ANY_DIGIT), { chars: DIGITS, star: true }, ...Array<Atom>(k).fill(ANY_DIGIT)]);
  }
  return out;
}

/** The atoms of one written number: sign, digits, and "." before the last k digits. */
function written(atoms: Atom[], k: number, negative: boolean): Atom[] {
  const seq = k > 0 ? [...atoms.slice(0, atoms.length - k), { chars: DOT }, ...atoms.slice(atoms.length - k)] : atoms;
  return negative ? [{ chars: MINUS }, ...seq] : seq;
}

/**
 * The union of the alternatives as a deterministic automaton, written as one EBNF rule per state.
 *
 * A flat union of many digit sequences is what xgrammar 0.1.27 matches wrongly: its automaton
 * simplification merges states it must not, and the union then accepts numbers outside the range, even
 * "08.75" (xgrammar issues #618, #911). Right-linear rules over a DFA we determinised ourselves leave it
 * nothing to merge, and fuzzing against the bounds finds no error.
 */
function dfaRules(alternatives: Atom[][], name: string): string {
  // NFA state = alternative index and position in it; a star atom loops on itself.
  const closure = (states: Array<[number, number]>): Array<[number, number]> => {
    const seen = new Set<string>();
    const out: Array<[number, number]> = [];
    const stack = [...states];
    while (stack.length > 0) {
      const [a, p] = stack.pop()!;
      const key = `${a},${p}`;
      if (seen.has(key)) continue;
      seen.add(key);
      out.push([a, p]);
      if (alternatives[a][p]?.star) stack.push([a, p + 1]);
    }
    return out.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  };
  const keyOf = (s: Array<[number, number]>) => s.map(([a, p]) => `${a},${p}`).join(';');
  const start = closure(alternatives.map((_, a) => [a, 0] as [number, number]));
  const ids = new Map<string, number>([[keyOf(start), 0]]);
  const queue = [start];
  const lines: string[] = [];
  for (let i = 0; i < queue.length; i++) {
    const state = queue[i];
    const byTarget = new Map<number, number>();
    let accepting = false;
    for (let c = 0; c < 12; c++) {
      const next: Array<[number, number]> = [];
      for (const [a, p] of state) {
        const atom = alternatives[a][p];
        if (atom && atom.chars & (1 << c)) next.push(atom.star ? [a, p] : [a, p + 1]);
      }
      if (next.length === 0) continue;
      const target = closure(next);
      const key = keyOf(target);
      let id = ids.get(key);
      if (id === undefined) {
        id = queue.length;
        ids.set(key, id);
        queue.push(target);
      }
      byTarget.set(id, (byTarget.get(id) ?? 0) | (1 << c));
    }
    for (const [a, p] of state) if (p === alternatives[a].length) accepting = true;
    const alts = [...byTarget].map(([target, chars]) => `${charClass(chars)} ${name}_${target}`);
    if (accepting) alts.push('""');
    lines.push(`${name}_${i} ::= ${alts.join(' | ')}`);
  }
  return lines.join('\n');
}

function charClass(chars: number): string {
  const parts: string[] = [];
  for (let c = 0; c < 10; c++) {
    if (!(chars & (1 << c))) continue;
    let d = c;
    while (d + 1 < 10 && chars & (1 << (d + 1))) d++;
    parts.push(d === c ? `${c}` : `${c}-${d}`);
    c = d;
  }
  if (chars & MINUS) parts.push('\\-');
  if (chars & DOT) parts.push('.');
  const single = parts.length === 1 && /^[0-9.]$|^\\-$/.test(parts[0]);
  if (single) return `"${parts[0] === '\\-' ? '-' : parts[0]}"`;
  return `[${parts.join('')}]`;
}

/**
 * EBNF rules (named `${name}_0`, `${name}_1`, ...; `${name}_0` is the number) for the numbers within the
 * bounds, or undefined when no number the grammar can write lies within them.
 */
export function numberRangeRules(b: NumberBounds, name: string): string | undefined {
  const lower = pickBound(b.minimum, b.exclusiveMinimum, 'lower');
  const upper = pickBound(b.maximum, b.exclusiveMaximum, 'upper');
  let digits = 0;
  if (!b.integer) {
    digits = Math.max(DEFAULT_FRACTION_DIGITS, lower?.value.scale ?? 0, upper?.value.scale ?? 0);
    digits = Math.min(digits, MAX_FRACTION_DIGITS);
  }
  const alts: Atom[][] = [];
  for (let k = 0; k <= digits; k++) {
    const lo = lower ? lowest(lower.value, k, lower.exclusive) : undefined;
    const hi = upper ? highest(upper.value, k, upper.exclusive) : undefined;
    if (lo !== undefined && hi !== undefined && lo > hi) continue;
    // Negative values, written as "-" and their magnitude (never "-0").
    if (lo === undefined || lo < 0n) {
      const magLo = hi === undefined || hi >= 0n ? 1n : -hi;
      const magHi = lo === undefined ? undefined : -lo;
      for (const s of nonNegative(magLo, magHi, k)) alts.push(written(s, k, true));
    }
    if (hi === undefined || hi >= 0n) {
      const from = lo === undefined || lo < 0n ? 0n : lo;
      for (const s of nonNegative(from, hi, k)) alts.push(written(s, k, false));
    }
  }
  if (alts.length === 0) return undefined;
  return dfaRules(alts, name);
}

/** The tighter of an inclusive and an exclusive bound on one side. */
function pickBound(inclusive: number | undefined, exclusive: number | undefined, side: 'lower' | 'upper'): { value: Decimal; exclusive: boolean } | undefined {
  if (inclusive === undefined && exclusive === undefined) return undefined;
  if (inclusive === undefined) return { value: toDecimal(exclusive!), exclusive: true };
  if (exclusive === undefined) return { value: toDecimal(inclusive), exclusive: false };
  const exclusiveIsTighter = side === 'lower' ? exclusive >= inclusive : exclusive <= inclusive;
  return exclusiveIsTighter ? { value: toDecimal(exclusive), exclusive: true } : { value: toDecimal(inclusive), exclusive: false };
}

/** Integer digits of a number without bounds: below 1e15, as bounds may state (spec-limits.ts). */
const UNBOUNDED_INTEGER_DIGITS = 15;

/**
 * EBNF rules (`${name}_0` is the number) for a number without bounds: up to 15 integer digits and, for
 * `number`, up to DEFAULT_FRACTION_DIGITS fraction digits, never an exponent, so every one is finite.
 */
export function unboundedNumberRules(integer: boolean, name: string): string {
  const fraction = integer ? '' : ` ("." [0-9]{1,${DEFAULT_FRACTION_DIGITS}})?`;
  return `${name}_0 ::= "-"? ("0" | [1-9] [0-9]{0,${UNBOUNDED_INTEGER_DIGITS - 1}})${fraction}`;
}
