/**
 * Finishing within a token budget. Near the end of max tokens the constraint asks for a short way to
 * complete the grammar from where it stands (close the open string, the object, the call) and, when
 * that barely fits, forces it. These are the searches it uses; all are pure: the matcher is rolled back
 * to where it was.
 */
import type { Matcher } from './constraint.ts';
import { GrammarEngineError } from './errors.ts';
import { UTF8_INVALID, Utf8State, utf8Run } from './utf8-guard.ts';
import type { GrammarVocabulary } from './vocabulary.ts';

/** Within this many tokens of the budget, the constraint looks for a way to complete the grammar. */
export const CLOSING_WINDOW = 128;
/**
 * Tokens kept in reserve: one sampled token can lengthen the shortest completion a lot (starting the
 * next key of an object with required keys adds the key, its value and the rest; starting another
 * tool call adds a whole call), so closing starts while the completion plus the longest completion
 * seen so far still fit, and at least this many tokens early.
 */
export const CLOSING_MARGIN = 8;
/**
 * Characters tried, in this order, when searching for a short completion: close what is open first,
 * then the shortest values, then separators and filler for minimum lengths.
 */
const CLOSE_ORDER = [
  ...['"', '}', ']', '0', 'n', 't', 'f', '{', '[', ',', ':', '-', '.', '1', 'a', ' ', 'e', '\n'],
  // Then anything printable: the first letter of an enum value, say.
  ...Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)),
];

/** The smallest byte that may come next in this UTF-8 state (it completes a valid character). */
function lowestContinuation(state: number): number {
  if (state === Utf8State.Need2AfterE0) return 0xa0;
  if (state === Utf8State.Need3AfterF0) return 0x90;
  return 0x80;
}

/**
 * Tokens that complete the grammar from here: first whatever finishes a character left half-written
 * (a lead byte from a byte token), then the closing text. Pure (the matcher is rolled back).
 */
export function closingTokens(v: GrammarVocabulary, matcher: Matcher, utf8State: number): number[] | undefined {
  const onAbort = (m: string) => new GrammarEngineError(`xgrammar failed while looking for a completion: ${m}`);
  const head: number[] = [];
  try {
    for (let state = utf8State; state !== Utf8State.Ready; ) {
      const byte = lowestContinuation(state);
      const id = v.longestTokenAt(Uint8Array.of(byte), 0);
      if (id < 0 || !v.runtime.runSync(() => matcher.acceptToken(id), onAbort)) return undefined;
      head.push(id);
      state = utf8Run(state, v.tokenizer.tokenBytes(id));
      if (state === UTF8_INVALID) return undefined;
    }
    const text = closingText(v, matcher);
    if (text === undefined) return undefined;
    const rest = tokenizeAccepted(v, matcher, text, Infinity);
    return rest.complete ? [...head, ...rest.tokens] : undefined;
  } finally {
    if (head.length > 0) v.runtime.runSync(() => matcher.rollBack(head.length), onAbort);
  }
}

/** A short text that completes the grammar from here: greedy (CLOSE_ORDER), else a bounded search. */
function closingText(v: GrammarVocabulary, m: Matcher): string | undefined {
  return greedyClosingText(v, m) ?? searchClosingText(v, m);
}

/** Characters the bounded search tries: line ends and fences close free text, the rest close JSON. */
const SEARCH_ALPHABET = ['\n', '`', '"', '}', ']', ' ', 'a', '0'];
const SEARCH_DEPTH = 6;
const SEARCH_NODES = 4000;

/**
 * Breadth-first over short strings of SEARCH_ALPHABET for the shortest one after which the grammar can
 * end. Needed where the greedy walk never closes: inside free text ("\n```" ends a fenced code line,
 * but the greedy walk keeps writing '"', which free text always takes).
 */
function searchClosingText(v: GrammarVocabulary, m: Matcher): string | undefined {
  const stop = v.stopTokens[0];
  const onAbort = (msg: string) => new GrammarEngineError(`xgrammar failed while searching for a completion: ${msg}`);
  return v.runtime.runSync(() => {
    let frontier = [''];
    let nodes = 0;
    for (let depth = 1; depth <= SEARCH_DEPTH; depth++) {
      const next: string[] = [];
      for (const prefix of frontier) {
        for (const ch of SEARCH_ALPHABET) {
          if (++nodes > SEARCH_NODES) return undefined;
          const text = prefix + ch;
          if (!m._acceptString(text)) continue;
          const ends = m.acceptToken(stop);
          m.rollBack(ends ? 2 : 1);
          if (ends) return text;
          next.push(text);
        }
      }
      frontier = next;
    }
    return undefined;
  }, onAbort);
}

function greedyClosingText(v: GrammarVocabulary, m: Matcher): string | undefined {
  const stop = v.stopTokens[0];
  let steps = 0;
  let text = '';
  const onAbort = (msg: string) => new GrammarEngineError(`xgrammar failed while looking for a completion: ${msg}`);
  return v.runtime.runSync(() => {
    try {
      for (let i = 0; i < 256; i++) {
        if (m.acceptToken(stop)) {
          steps++;
          return text;
        }
        const forced = m.findJumpForwardString();
        if (forced && m._acceptString(forced)) {
          steps++;
          text += forced;
          continue;
        }
        const ch = CLOSE_ORDER.find((c) => m._acceptString(c));
        if (ch === undefined) return undefined;
        steps++;
        text += ch;
      }
      return undefined;
    } finally {
      if (steps > 0) m.rollBack(steps);
    }
  }, onAbort);
}

/**
 * `text` as tokens the grammar accepts from here, longest vocabulary entry first, at most `limit`;
 * `complete` when they spell all of it. The tokenization may differ from the tokenizer's own.
 */
export function tokenizeAccepted(v: GrammarVocabulary, matcher: Matcher, text: string, limit: number): { tokens: number[]; complete: boolean } {
  const bytes = new TextEncoder().encode(text);
  const tokens: number[] = [];
  const onAbort = (msg: string) => new GrammarEngineError(`xgrammar failed tokenizing a forced text: ${msg}`);
  let at = 0;
  try {
    while (at < bytes.length && tokens.length < limit) {
      const id = v.longestTokenAt(bytes, at);
      if (id < 0 || !v.runtime.runSync(() => matcher.acceptToken(id), onAbort)) break;
      tokens.push(id);
      at += v.tokenizer.tokenBytes(id).length;
    }
  } finally {
    if (tokens.length > 0) v.runtime.runSync(() => matcher.rollBack(tokens.length), onAbort);
  }
  return { tokens, complete: at === bytes.length };
}
