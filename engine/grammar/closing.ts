/**
 * Finishing within a token budget. Near the end of max tokens the constraint keeps a short way to
 * complete the grammar from where it stands (close the open string, the object, the call), and allows
 * only tokens after which such a completion still fits (budgetFilter); when only the completion itself
 * fits, it is forced. These are the searches it uses; all are pure: the matcher is rolled back to where
 * it was.
 */
import type { Matcher } from './constraint.ts';
import { GrammarEngineError } from './errors.ts';
import { UTF8_INVALID, Utf8State, utf8Run } from './utf8-guard.ts';
import type { GrammarVocabulary } from './vocabulary.ts';
import { concatBytes } from '../bytes.ts';

/**
 * Within this many tokens of the budget (beyond the shortest answer's own length), the constraint keeps a
 * completion in hand and lets through only tokens after which a completion still fits.
 */
export const CLOSING_WINDOW = 128;
/**
 * Milliseconds one budget check (budgetFilter) may spend on tokens beyond the plan's own: it runs for
 * every token near the end of max_tokens, while the engine waits for the mask.
 */
export const BUDGET_CHECK_MS = 20;
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
export function closingTokens(v: GrammarVocabulary, matcher: Matcher, utf8State: number, deadline = Infinity): number[] | undefined {
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
    const text = closingText(v, matcher, deadline);
    if (text === undefined) return undefined;
    const rest = tokenizeAccepted(v, matcher, text, Infinity);
    return rest.complete ? [...head, ...rest.tokens] : undefined;
  } finally {
    if (head.length > 0) v.runtime.runSync(() => matcher.rollBack(head.length), onAbort);
  }
}

/** A short text that completes the grammar from here: greedy (CLOSE_ORDER), else a bounded search. */
function closingText(v: GrammarVocabulary, m: Matcher, deadline: number): string | undefined {
  return greedyClosingText(v, m, deadline) ?? searchClosingText(v, m, deadline);
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
function searchClosingText(v: GrammarVocabulary, m: Matcher, deadline: number): string | undefined {
  const stop = v.stopTokens[0];
  const onAbort = (msg: string) => new GrammarEngineError(`xgrammar failed while searching for a completion: ${msg}`);
  return v.runtime.runSync(() => {
    // What the grammar forces first (an opening fence) is not part of the search.
    const forced = m.findJumpForwardString();
    const head = forced && m._acceptString(forced) ? forced : '';
    try {
      const found = searchFrom(m, stop, deadline);
      return found === undefined ? undefined : head + found;
    } finally {
      if (head) m.rollBack(1);
    }
  }, onAbort);
}

function searchFrom(m: Matcher, stop: number, deadline: number): string | undefined {
  {
    let frontier = [''];
    let nodes = 0;
    for (let depth = 1; depth <= SEARCH_DEPTH; depth++) {
      const next: string[] = [];
      for (const prefix of frontier) {
        for (const ch of SEARCH_ALPHABET) {
          if (++nodes > SEARCH_NODES || ((nodes & 63) === 0 && performance.now() > deadline)) return undefined;
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
  }
}

const QUOTE_RUN = '"'.repeat(8);

function greedyClosingText(v: GrammarVocabulary, m: Matcher, deadline: number): string | undefined {
  const stop = v.stopTokens[0];
  let steps = 0;
  let text = '';
  const onAbort = (msg: string) => new GrammarEngineError(`xgrammar failed while looking for a completion: ${msg}`);
  return v.runtime.runSync(() => {
    try {
      for (let i = 0; i < 256; i++) {
        if ((i & 15) === 15 && performance.now() > deadline) return undefined;
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
        // Quotes that close nothing: free text, which the bounded search closes instead.
        if (text.endsWith(QUOTE_RUN)) return undefined;
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

/**
 * Clear from `words` (a token mask) every token after which no completion fits in the `room - 1`
 * tokens then left, and return the completion found after each token kept. `plan` is a completion from
 * here that fits in `room`; its first token always stays. Most tokens are checked with one matcher
 * call: does the plan's own text (or an earlier plan's, `earlier`: a code line's end needs the "\n"
 * its start did not) still end the grammar after the token? That is a letter inside a string, say. Any
 * other token (one that closes, or opens a new key, element or call) gets its own search. So the reserve
 * before each token is the completion after that very token, whatever it starts. Stop tokens are left as
 * they are. Pure (the matcher is rolled back).
 */
export function budgetFilter(
  v: GrammarVocabulary,
  matcher: Matcher,
  words: Uint32Array,
  plan: readonly number[],
  earlier: readonly (readonly number[])[],
  utf8State: number,
  room: number,
): Map<number, number[]> {
  const after = new Map<number, number[]>();
  const stop = v.stopTokens[0];
  const tokenizer = v.tokenizer;
  const textOf = (tokens: readonly number[]) => new TextDecoder().decode(concatBytes(tokens.map((t) => tokenizer.tokenBytes(t))));
  // The plan's head finishes a character left half-written; after a token, the rest may still close.
  let headLength = 0;
  for (let st = utf8State; st !== Utf8State.Ready && headLength < plan.length; headLength++) st = utf8Run(st, tokenizer.tokenBytes(plan[headLength]));
  const candidates = [plan.slice(headLength), ...earlier.map((e) => [...e])].map((tokens) => ({ tokens, text: textOf(tokens) }));
  const heads = new Map<number, number[] | undefined>();
  const onAbort = (m: string) => new GrammarEngineError(`xgrammar failed checking a token against the budget: ${m}`);
  const accept = (t: number) => v.runtime.runSync(() => matcher.acceptToken(t), onAbort);
  const rollBack = (n: number) => n > 0 && v.runtime.runSync(() => matcher.rollBack(n), onAbort);
  const first = plan[0];
  // Past the deadline, tokens not yet checked are dropped unchecked: only tokens known to leave a
  // completion that fits stay, so the guarantee holds, and one check costs at most about that much.
  const deadline = performance.now() + BUDGET_CHECK_MS;
  for (let w = 0; w < words.length; w++) {
    let bits = words[w];
    while (bits !== 0) {
      const low = bits & -bits;
      bits ^= low;
      const t = (w << 5) | (31 - Math.clz32(low));
      if (t === first || v.isStopToken(t)) continue;
      const state = utf8Run(utf8State, tokenizer.tokenBytes(t));
      let fits: number[] | undefined;
      if (state !== UTF8_INVALID && performance.now() < deadline && accept(t)) {
        if (!heads.has(state)) heads.set(state, continuationHead(v, state));
        const head = heads.get(state);
        let took = 0;
        if (head !== undefined) while (took < head.length && accept(head[took])) took++;
        if (head !== undefined && took === head.length) {
          const c = candidates.find((c) => head.length + c.tokens.length <= room - 1 && endsWith(v, matcher, c.text, stop, onAbort));
          if (c) fits = [...head, ...c.tokens];
        }
        rollBack(took);
        if (fits === undefined) {
          const own = closingTokens(v, matcher, state, deadline);
          if (own !== undefined && own.length <= room - 1) fits = own;
        }
        rollBack(1);
      }
      if (fits) after.set(t, fits);
      else words[w] &= ~low;
    }
  }
  return after;
}

/** The tokens that finish a character left half-written in this UTF-8 state with its lowest bytes. */
function continuationHead(v: GrammarVocabulary, state: number): number[] | undefined {
  const head: number[] = [];
  while (state !== Utf8State.Ready) {
    const id = v.longestTokenAt(Uint8Array.of(lowestContinuation(state)), 0);
    if (id < 0) return undefined;
    head.push(id);
    state = utf8Run(state, v.tokenizer.tokenBytes(id));
    if (state === UTF8_INVALID) return undefined;
  }
  return head;
}

/** Whether `text` and then the end are accepted from here. Pure. */
function endsWith(v: GrammarVocabulary, m: Matcher, text: string, stop: number, onAbort: (m: string) => Error): boolean {
  return v.runtime.runSync(() => {
    const took = text.length === 0 || m._acceptString(text);
    if (!took) return false;
    const ends = m.acceptToken(stop);
    const steps = (text.length === 0 ? 0 : 1) + (ends ? 1 : 0);
    if (steps > 0) m.rollBack(steps);
    return ends;
  }, onAbort);
}
