/**
 * Runs a chain of pre-tokenizer steps the way llama.cpp's unicode_regex_split does: every step splits
 * each piece left by the previous step; a regex step keeps both its matches and the text between them.
 */
import type { CodePointSplitter } from './split-custom.ts';
import { WHITESPACE_CODE_POINTS } from './unicode-flags.ts';

export type PreTokenizerStep = { custom: CodePointSplitter } | { regex: RegExp };

/**
 * llama.cpp runs general regexes on a copy of the text where every non-ASCII whitespace code point is
 * U+000B, so that an ASCII-only \s sees it. Patterns written for this text use ASCII_WS instead of \s.
 */
export const ASCII_WS = '\\t\\n\\v\\f\\r ';

function asciiWhitespaceText(text: string): string {
  let out = '';
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c > 0x7f && WHITESPACE_CODE_POINTS.has(c)) {
      out += text.slice(from, i) + '\v';
      from = i + 1;
    }
  }
  return from === 0 ? text : out + text.slice(from);
}

export function preTokenize(text: string, steps: readonly PreTokenizerStep[]): string[] {
  if (text.length === 0) return [];
  // Code points, and the UTF-16 offset where each starts (at[n] = text.length).
  const cps: number[] = [];
  const at: number[] = [];
  for (let i = 0; i < text.length; ) {
    const cp = text.codePointAt(i) as number;
    cps.push(cp);
    at.push(i);
    i += cp > 0xffff ? 2 : 1;
  }
  at.push(text.length);

  // Built on first use: only regex steps need them.
  let wsText: string | undefined;
  let cpIndexAt: Int32Array | undefined;
  /** A regex step on cps[start, end): cuts before and after every match, as llama.cpp keeps both. */
  const regexSplit = (re: RegExp, start: number, end: number, cut: (e: number) => void) => {
    wsText ??= asciiWhitespaceText(text);
    if (!cpIndexAt) {
      cpIndexAt = new Int32Array(text.length + 1);
      for (let i = 0; i <= cps.length; i++) cpIndexAt[at[i]] = i;
    }
    const base = at[start];
    const piece = wsText.slice(base, at[end]);
    re.lastIndex = 0;
    for (let m = re.exec(piece); m !== null; m = re.exec(piece)) {
      if (m[0].length === 0) {
        // None of our patterns can match empty; guard against an endless loop all the same.
        re.lastIndex += 1;
        continue;
      }
      cut(cpIndexAt[base + m.index]);
      cut(cpIndexAt[base + m.index + m[0].length]);
    }
  };

  let ends = [cps.length];
  for (const step of steps) {
    const next: number[] = [];
    let last = 0;
    const cut = (e: number): void => {
      if (e > last) {
        next.push(e);
        last = e;
      }
    };
    let start = 0;
    for (const end of ends) {
      if ('custom' in step) step.custom(cps, start, end, cut);
      else regexSplit(step.regex, start, end, cut);
      cut(end);
      start = end;
    }
    ends = next;
  }

  const words: string[] = [];
  let start = 0;
  for (const end of ends) {
    words.push(text.slice(at[start], at[end]));
    start = end;
  }
  return words;
}
