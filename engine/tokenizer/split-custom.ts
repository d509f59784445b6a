/**
 * Hand-written matchers for the three most common BPE pre-tokenizer regexes. llama.cpp does not run
 * these patterns through a regex engine but through state machines (unicode.cpp:
 * unicode_regex_split_custom_*) whose edge cases are the reference, so we follow the same steps.
 *
 * Each splitter works on the code points cps[start, end) and calls `cut(i)` with the end index of
 * every piece, in order.
 */
import { ANY, codePointFlags, LETTER, NUMBER, WHITESPACE } from './unicode-flags.ts';

export type CodePointSplitter = (cps: ArrayLike<number>, start: number, end: number, cut: (end: number) => void) => void;

const OUT = -1;
const CR = 0x0d;
const LF = 0x0a;
const SPACE = 0x20;
const APOSTROPHE = 0x27;
const ch = (c: string): number => c.charCodeAt(0);

/** Only ASCII letters can complete a contraction, so ASCII lower-casing is all that is needed. */
function lower(c: number): number {
  return c >= 0x41 && c <= 0x5a ? c + 32 : c;
}

/** Shared scaffolding: reads outside the piece see "nothing" (OUT, flags 0), as in llama.cpp. */
function reader(cps: ArrayLike<number>, start: number, end: number) {
  return {
    cpt: (p: number): number => (p >= start && p < end ? cps[p] : OUT),
    flags: (p: number): number => (p >= start && p < end ? codePointFlags(cps[p]) : 0),
  };
}

/**
 * Where the last alternatives of all three patterns end a piece starting at pos, given the run of
 * `spaces` whitespace there: \s+(?!\S) leaves the last space to prefix the next word, \s+ takes the
 * run, anything else is one code point.
 */
function endOfTail(cpt: (p: number) => number, pos: number, spaces: number): number {
  if (spaces > 1 && cpt(pos + spaces) !== OUT) return pos + spaces - 1;
  if (spaces > 0) return pos + spaces;
  return pos + 1;
}

/** Length of the contraction at pos ('s 't 'm 'd 're 've 'll), or 0. */
function contraction(cpt: (p: number) => number, pos: number, end: number, caseless: boolean): number {
  if (cpt(pos) !== APOSTROPHE || pos + 1 >= end) return 0;
  const fold = caseless ? lower : (c: number) => c;
  const a = fold(cpt(pos + 1));
  if (a === ch('s') || a === ch('t') || a === ch('m') || a === ch('d')) return 2;
  if (pos + 2 < end) {
    const b = fold(cpt(pos + 2));
    if ((a === ch('r') && b === ch('e')) || (a === ch('v') && b === ch('e')) || (a === ch('l') && b === ch('l'))) return 3;
  }
  return 0;
}

/** 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+ */
export const splitGpt2: CodePointSplitter = (cps, start, end, cut) => {
  const { cpt, flags } = reader(cps, start, end);
  for (let pos = start; pos < end; ) {
    const c = cpt(pos);
    const f = flags(pos);

    const n = contraction(cpt, pos, end, false);
    if (n > 0) {
      pos += n;
      cut(pos);
      continue;
    }

    let f2 = c === SPACE ? flags(pos + 1) : f;
    if (f2 & LETTER) {
      if (c === SPACE) pos++;
      while (f2 & LETTER) f2 = flags(++pos);
      cut(pos);
      continue;
    }
    if (f2 & NUMBER) {
      if (c === SPACE) pos++;
      while (f2 & NUMBER) f2 = flags(++pos);
      cut(pos);
      continue;
    }
    if (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f2 & ANY) {
      if (c === SPACE) pos++;
      while (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f2 & ANY) f2 = flags(++pos);
      cut(pos);
      continue;
    }

    let spaces = 0;
    while (flags(pos + spaces) & WHITESPACE) spaces++;
    pos = endOfTail(cpt, pos, spaces);
    cut(pos);
  }
};

/**
 * The Llama 3 and Qwen 2 patterns differ only in how many digits a number piece takes (1-3 vs 1):
 * (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 */
function llama3Like(maxDigits: number): CodePointSplitter {
  return (cps, start, end, cut) => {
    const { cpt, flags } = reader(cps, start, end);
    for (let pos = start; pos < end; ) {
      const c = cpt(pos);
      const f = flags(pos);

      const n = contraction(cpt, pos, end, true);
      if (n > 0) {
        pos += n;
        cut(pos);
        continue;
      }

      // [^\r\n\p{L}\p{N}]?\p{L}+
      if (!(c === CR || c === LF || f & NUMBER)) {
        if (f & LETTER || flags(pos + 1) & LETTER) {
          pos++;
          while (flags(pos) & LETTER) pos++;
          cut(pos);
          continue;
        }
      }

      // \p{N}{1,maxDigits}
      if (f & NUMBER) {
        let first = pos;
        while (flags(pos) & NUMBER) {
          if (++pos - first >= maxDigits) {
            cut(pos);
            first = pos;
          }
        }
        cut(pos);
        continue;
      }

      // ' ?[^\s\p{L}\p{N}]+[\r\n]*'. llama.cpp tests the in-range bit of the first code point here.
      let f2 = c === SPACE ? flags(pos + 1) : f;
      if (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f & ANY) {
        if (c === SPACE) pos++;
        while (!(f2 & (WHITESPACE | LETTER | NUMBER)) && f2 & ANY) f2 = flags(++pos);
        let c2 = cpt(pos);
        while (c2 === CR || c2 === LF) c2 = cpt(++pos);
        cut(pos);
        continue;
      }

      let spaces = 0;
      let afterLastNewline = 0;
      while (flags(pos + spaces) & WHITESPACE) {
        const c2 = cpt(pos + spaces);
        if (c2 === CR || c2 === LF) afterLastNewline = pos + spaces + 1;
        spaces++;
      }
      // \s*[\r\n]+
      if (afterLastNewline > 0) {
        pos = afterLastNewline;
        cut(pos);
        continue;
      }
      pos = endOfTail(cpt, pos, spaces);
      cut(pos);
    }
  };
}

export const splitLlama3 = llama3Like(3);
export const splitQwen2 = llama3Like(1);
