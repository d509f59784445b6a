/**
 * Constraints inside the scheduler: jump-forward appends the tokens a grammar forces without sampling
 * them, and a constraint that fails ends only its own sequence.
 */
import { describe, expect, it } from 'vitest';
import Ajv from 'ajv';
import { compileGrammar } from '../../engine/grammar/index.ts';
import type { TokenConstraint } from '../../engine/types.ts';
import { testEngine } from '../helpers/engine.ts';

const schema = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 12 }, age: { type: 'integer', minimum: 0, maximum: 120 }, pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 2 } },
  required: ['name', 'age', 'pets'],
};

describe('constraints in the scheduler', () => {
  it('jump-forward writes forced tokens without sampling them, and the output still validates', async () => {
    const engine = await testEngine();
    const grammar = await compileGrammar(engine.tokenizer, { type: 'json_schema', schema, strict: true });
    const validate = new Ajv().compile(schema);
    for (const seed of [1, 2, 3]) {
      const constraint = await grammar.createConstraint({ maxTokens: 120 });
      const gen = engine.generate({ prompt: 'Once upon a time', maxTokens: 120, temperature: 1, seed, constraint });
      const r = await gen.result;
      expect(r.finishReason, r.text).toBe('stop');
      expect(validate(JSON.parse(r.text)), r.text).toBe(true);
      // Keys, quotes and separators are forced by the schema: whole runs of tokens skip sampling.
      expect(r.forcedTokens).toBeGreaterThan(5);
      expect(r.forcedTokens).toBeLessThan(r.completionTokens);
    }
  });

  it('a constraint that throws ends its own sequence only', async () => {
    const engine = await testEngine();
    let calls = 0;
    const broken: TokenConstraint = {
      mask() {
        if (++calls === 3) throw new Error('grammar exploded at step 3');
        return null;
      },
      accept() {},
      isDone: () => false,
    };
    const bad = engine.generate({ prompt: 'Once upon a time', maxTokens: 20, temperature: 0, constraint: broken });
    const good = engine.generate({ prompt: 'The little dog', maxTokens: 20, temperature: 0 });
    await expect(bad.result).rejects.toThrow(/grammar exploded at step 3/);
    const r = await good.result;
    expect(r.completionTokens).toBe(20);
    expect(engine.stats().activeSequences).toBe(0);
  });

  it('releases a constraint when its generation ends, however it ends', async () => {
    const engine = await testEngine();
    let disposed = 0;
    const plain = (): TokenConstraint => ({ mask: () => null, accept() {}, isDone: () => false, dispose: () => void disposed++ });
    await engine.generate({ prompt: 'Once upon a time', maxTokens: 3, constraint: plain() }).result;
    const controller = new AbortController();
    const aborted = engine.generate({ prompt: 'Once upon a time', maxTokens: 50, constraint: plain(), signal: controller.signal });
    controller.abort();
    await aborted.result;
    expect(disposed).toBe(2);
  });
});
