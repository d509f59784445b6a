/**
 * A synthetic GPT-2-style byte-level BPE vocabulary of an exact size that llama.cpp accepts:
 * the 256 byte tokens (in GPT-2's byte→unicode mapping, so every byte, "\n" included, has a token), then
 * tokens made by merges in rank order (each merge "A B" joins two existing tokens into the next new one),
 * then or before them the model's control tokens. All texts are unique: llama.cpp aborts on duplicates.
 */
import { Rng } from './random.ts';

/** llama.cpp token types (tokenizer.ggml.token_type). */
export const TOKEN_NORMAL = 1;
export const TOKEN_CONTROL = 3;

export interface SyntheticVocab {
  tokens: string[];
  types: Int32Array;
  merges: string[];
}

/** GPT-2's bytes_to_unicode: printable bytes map to themselves, the rest to U+0100 upwards (space → "Ġ", "\n" → "Ċ"). */
export function byteLevelAlphabet(): string[] {
  const printable: number[] = [];
  for (let b = 0x21; b <= 0x7e; b++) printable.push(b);
  for (let b = 0xa1; b <= 0xac; b++) printable.push(b);
  for (let b = 0xae; b <= 0xff; b++) printable.push(b);
  const chars = printable.map((b) => String.fromCodePoint(b));
  let extra = 0;
  for (let b = 0; b < 256; b++) if (!printable.includes(b)) chars.push(String.fromCodePoint(256 + extra++));
  return chars;
}

const MAX_TOKEN_CHARS = 16;

/**
 * Word-like merges: a word piece (letters) or a word start ("Ġ" + letters) followed by a word piece, favouring
 * early (short, "frequent") tokens as real BPE training does. Deterministic: the vocabulary depends only on
 * its size and specials, not on the weight seed, so tokenization is stable across synthesized files.
 */
function generateMerges(count: number, taken: Set<string>): { merges: string[]; tokens: string[] } {
  const rng = new Rng(0x5eed, 'vocab');
  const lower = 'abcdefghijklmnopqrstuvwxyz'.split('');
  const pieces = [...lower];
  const starts = ['Ġ', ...lower.map((c) => c.toUpperCase())];
  const merges: string[] = [];
  const tokens: string[] = [];
  const pick = (pool: string[]) => pool[Math.floor(pool.length * rng.uniform() ** 2)];
  while (merges.length < count) {
    const fromStart = rng.uniform() < 0.5;
    const left = pick(fromStart ? starts : pieces);
    const right = pick(pieces);
    const text = left + right;
    if (text.length > MAX_TOKEN_CHARS || taken.has(text)) continue;
    taken.add(text);
    merges.push(`${left} ${right}`);
    tokens.push(text);
    (fromStart ? starts : pieces).push(text);
  }
  return { merges, tokens };
}

export function synthesizeVocab(size: number, specials: readonly string[], specialsAt: 'start' | 'end'): SyntheticVocab {
  const bytes = byteLevelAlphabet();
  const mergeCount = size - specials.length - bytes.length;
  if (mergeCount < 0) throw new Error(`vocabulary of ${size} is too small for 256 byte tokens and ${specials.length} special tokens`);
  const taken = new Set([...bytes, ...specials]);
  if (taken.size !== bytes.length + specials.length) throw new Error('special tokens repeat or collide with byte tokens');
  const { merges, tokens: merged } = generateMerges(mergeCount, taken);
  const regular = [...bytes, ...merged];
  const tokens = specialsAt === 'start' ? [...specials, ...regular] : [...regular, ...specials];
  const types = new Int32Array(size).fill(TOKEN_NORMAL);
  const specialFrom = specialsAt === 'start' ? 0 : regular.length;
  types.fill(TOKEN_CONTROL, specialFrom, specialFrom + specials.length);
  return { tokens, types, merges };
}
