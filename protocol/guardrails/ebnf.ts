/**
 * The EBNF (xgrammar's dialect, see engine/grammar/ebnf-check.ts) of the built-in guardrails. Each
 * grammar is the whole guarantee: whatever the model would rather say, the output has this form.
 */

/** `s` as an EBNF string literal; everything outside printable ASCII escaped so no byte is misread. */
export function literal(s: string): string {
  let out = '"';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (ch === '\r') out += '\\r';
    else if (cp >= 0x20 && cp < 0x7f) out += ch;
    else if (cp <= 0xffff) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += `\\U${cp.toString(16).padStart(8, '0')}`;
  }
  return `${out}"`;
}

/** Between `min` and `max` more of `item` (written so that a count of zero adds nothing). */
function upTo(item: string, max: number): string {
  return max <= 0 ? '' : ` (${item}){0,${max}}`;
}

/** Exactly one of the labels. */
export function labelsGrammar(labels: readonly string[]): string {
  return `root ::= ${labels.map(literal).join(' | ')}\n`;
}

/**
 * A word is 1-40 characters without ASCII whitespace (bounded, so a model that never ends one cannot spend
 * the whole budget on it); words are separated by one space. Prose does not start with a list or
 * heading marker, so it cannot pass for bullets. Any complete word may end the output, so the
 * constraint can always stop in time. Only ASCII whitespace is excluded: xgrammar 0.1.27 clamps a
 * negated class to ASCII and gets positive classes of non-ASCII ranges wrong, so a no-break space may
 * sit inside a word.
 */
const WORD_RULES = 'word ::= [^ \\t\\r\\n\\v\\f]{1,40}\nfirst ::= [^ \\t\\r\\n\\v\\f*#-] [^ \\t\\r\\n\\v\\f]{0,39}\n';

/** One paragraph (no line breaks) of 1..maxWords words. */
export function proseGrammar(maxWords: number): string {
  return `root ::= first${upTo('" " word', maxWords - 1)}\n${WORD_RULES}`;
}

/** 1..maxBullets lines, each `- ` and 1..wordsPerBullet words, separated by newlines. */
export function bulletsGrammar(maxBullets: number, wordsPerBullet: number): string {
  return `root ::= bullet${upTo('"\\n" bullet', maxBullets - 1)}\nbullet ::= "- " word${upTo('" " word', wordsPerBullet - 1)}\n${WORD_RULES}`;
}

/** The fixed not-found answer, or 1..maxSpans of the given spans (verbatim) joined by single spaces. */
export function groundedGrammar(notFound: string, spans: readonly string[], maxSpans: number): string {
  if (spans.length === 0) return `root ::= ${literal(notFound)}\n`;
  return `root ::= ${literal(notFound)} | span${upTo('" " span', maxSpans - 1)}\nspan ::= ${spans.map(literal).join(' | ')}\n`;
}

/**
 * A fenced block first (so every answer has one), then text and more blocks. Only fence lines start
 * with ``` (text outside blocks has no backticks at all, and no code line starts with ```), so the
 * number of lines starting with ``` tells whether output ends inside a block: see closeFence.
 */
export const FENCED_CODE_GRAMMAR = `root ::= block ("\\n" prose block)* tail
block ::= "\`\`\`" lang "\\n" code-line* "\`\`\`"
lang ::= [A-Za-z0-9_+#.-]{0,32}
code-line ::= ([^\`\\n] [^\\n]* | "\`" [^\`\\n] [^\\n]* | "\`\`" [^\`\\n] [^\\n]*)? "\\n"
prose ::= ([^\`\\n]* "\\n")*
tail ::= ("\\n" [^\`]*)?
`;

export const FENCE = '```';

/**
 * What closes output of FENCED_CODE_GRAMMAR cut off inside a block ('' when it is not). The engine's
 * budget closing ends blocks within max_tokens; this is the safety net for output cut some other way
 * (a caller's own stop string), so the answer is still a sentence of the grammar.
 */
export function closeFence(text: string): string {
  const lines = text.split('\n');
  if (lines.filter((l) => l.startsWith(FENCE)).length % 2 === 0) return '';
  const last = lines[lines.length - 1];
  // Still on the opening line (its language tag), or mid-line in the code: the fence needs a line of its own.
  if (last.startsWith(FENCE) || !FENCE.startsWith(last)) return `\n${FENCE}`;
  return FENCE.slice(last.length);
}
