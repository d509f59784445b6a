/** EBNF / GBNF grammars: our syntax check (errors with line and column) and generation under them. */
import { describe, expect, it } from 'vitest';
import { checkEbnf, compileGrammar, GrammarInputError } from '../../engine/grammar/index.ts';
import { randomWalk, seeded, tokenizerOf } from './helpers.ts';

const check = (src: string) => {
  try {
    checkEbnf(src);
    return 'ok';
  } catch (e) {
    expect(e).toBeInstanceOf(GrammarInputError);
    return (e as Error).message;
  }
};

describe('checkEbnf', () => {
  it('accepts GBNF as llama.cpp writes it', () => {
    expect(check('root ::= "{" ws pair (ws "," ws pair)* ws "}"  # an object\npair ::= [a-z]+ ws ":" ws ("true" | "false")\nws ::= [ \\t\\n]*')).toBe('ok');
    expect(check('root ::= x{2,3} y{2} y{1,}\nx ::= [^"\\\\\\x00-\\x1f]\ny ::= "\\u00e9" | [\\]\\-]')).toBe('ok');
    expect(check('root ::= "a" (= "b")')).toBe('ok');
  });

  it('names what is wrong and where', () => {
    expect(check('root ::= "a" b')).toBe('grammar: rule "b" is used but not defined at line 1, column 14');
    expect(check('root ::= "a" |')).toBe('grammar: expected an element (use "" for the empty string) at line 1, column 15');
    expect(check('root ::= ')).toBe('grammar: expected an element (use "" for the empty string) at line 1, column 10');
    expect(check('root ::= "a"{2,1}')).toBe('grammar: repetition {2,1} has its maximum below its minimum at line 1, column 13');
    expect(check('root ::= [z-a]')).toBe('grammar: character range runs backwards at line 1, column 13');
    expect(check("root ::= 'a'")).toBe('grammar: strings use double quotes at line 1, column 10');
    expect(check('root ::= x\nx ::= "a"\nx ::= "b"')).toBe('grammar: rule "x" is defined twice at line 3, column 1');
    expect(check('root ::= "\\q"')).toBe('grammar: unknown escape \\q at line 1, column 11');
    expect(check('root ::= "a"{,3}')).toBe('grammar: expected a repetition {n}, {n,} or {n,m} at line 1, column 13');
    expect(check('root ::= "abc')).toBe('grammar: unterminated string at line 1, column 10');
    expect(check('root ::= ("a"')).toBe('grammar: expected ")" at line 1, column 14');
    expect(check('start ::= "a"')).toBe('grammar: there is no rule named "root" (the root rule)');
    expect(check('root ::= "a" (= "")')).toBe('grammar: a lookahead may not be the empty string at line 1, column 14');
  });
});

describe('generation under EBNF', () => {
  it('every walk matches the grammar (checked with an equivalent regular expression)', async () => {
    const grammar = 'root ::= ("yes" | "no") ", " item (", " item){0,2} "."\nitem ::= [a-z]{1,6}';
    const re = /^(yes|no), [a-z]{1,6}(, [a-z]{1,6}){0,2}\.$/;
    for (const file of ['stories260K.gguf', 'TinyStories-656K-Q8_0.gguf', 'llama-2-tiny-random.gguf']) {
      const t = await tokenizerOf(file);
      const g = await compileGrammar(t, { type: 'ebnf', grammar });
      for (let seed = 1; seed <= 15; seed++) {
        const { text, done } = randomWalk(await g.createConstraint({ maxTokens: 60 }), t, seeded(seed), 60);
        expect(done, `${file} ${seed}: ${text}`).toBe(true);
        expect(text, file).toMatch(re);
      }
    }
  });
});
