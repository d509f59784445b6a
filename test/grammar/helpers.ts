/** Shared by the grammar tests: real tokenizers, a real validator, and walks that sample the mask. */
import '../../engine/grammar/xgrammar-node.ts';
import Ajv from 'ajv';
import { expect } from 'vitest';
import type { CompiledGrammar, GrammarConstraint } from '../../engine/grammar/index.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import { modelTokenizer } from '../tokenizer/load.ts';
import { xorshift32 } from '../../kernels/probes/xorshift.ts';

const tokenizers = new Map<string, Promise<Tokenizer>>();

/** stories260K (512, byte fallback), TinyStories-656K (2048, no byte tokens), llama-2-tiny-random (32000). */
export function tokenizerOf(file: string): Promise<Tokenizer> {
  let t = tokenizers.get(file);
  if (!t) {
    t = modelTokenizer(file);
    tokenizers.set(file, t);
  }
  return t;
}

/**
 * The summary forms' word, as a RegExp source (use the `u` flag: 1..40 code points without ASCII
 * whitespace), and a prose paragraph's first word (no list or heading marker).
 */
export const SUMMARY_WORD = '[^ \\t\\r\\n\\v\\f]{1,40}';
export const SUMMARY_FIRST_WORD = '[^ \\t\\r\\n\\v\\f*#-][^ \\t\\r\\n\\v\\f]{0,39}';

export const ajv = new Ajv({ strict: false, allErrors: true });

export function allowedTokens(mask: Uint32Array, vocabSize: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < vocabSize; i++) if (mask[i >>> 5] & (1 << (i & 31))) out.push(i);
  return out;
}

export function seeded(seed: number): () => number {
  const next = xorshift32(seed);
  return () => next() / 2 ** 32;
}

/** Sample uniformly among the allowed tokens until the constraint is done or `limit` tokens; the text as the engine would stream it. */
export function randomWalk(c: GrammarConstraint, t: Tokenizer, random: () => number, limit: number): { text: string; tokens: number[]; done: boolean } {
  const tokens: number[] = [];
  while (tokens.length < limit && !c.isDone()) {
    const allowed = allowedTokens(c.mask(), t.vocabSize);
    if (allowed.length === 0) break;
    const tok = allowed[Math.floor(random() * allowed.length)];
    c.accept(tok);
    tokens.push(tok);
  }
  const decoder = t.streamDecoder();
  let text = '';
  for (const tok of tokens) text += t.isControl(tok) ? '' : decoder.push(tok);
  text += decoder.flush();
  return { text, tokens, done: c.isDone() };
}

/**
 * The shortest answer's length in tokens, as the constraint itself finds it: with a budget of 1 it
 * forces its shortest completion token by token (the end is allowed once it is written).
 */
export async function shortestAnswer(g: CompiledGrammar, t: Tokenizer): Promise<number> {
  const c = await g.createConstraint({ maxTokens: 1 });
  let n = 0;
  while (!c.isDone()) {
    const allowed = allowedTokens(c.mask(), t.vocabSize);
    if (allowed.some((x) => t.isEndOfGeneration(x))) break;
    expect(allowed).toHaveLength(1);
    c.accept(allowed[0]);
    n++;
  }
  c.dispose();
  return n;
}
