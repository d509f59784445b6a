/** Small things users hit on the API: errors that name the right field once, advice that works, honest confidence. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, chatBody, postJson, startServer, type Harness } from './helpers/harness.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startServer();
  key = h.key('professional', { paid: true });
});
afterAll(() => h.close());

const infer = (body: Record<string, unknown>) => postJson(`${h.baseURL}/infer`, body, bearer(key));
const chat = (extra: Record<string, unknown>) => postJson(`${h.baseURL}/chat/completions`, chatBody(extra), bearer(key));

describe('errors', () => {
  it("name 'specialist', not the model, on /v1/infer", async () => {
    const res = await infer({ specialist: 'poet', prompt: 'x' });
    expect(res.status).toBe(404);
    const { error } = await res.json();
    expect(error).toMatchObject({ param: 'specialist', code: 'model_not_found' });
    expect(error.message).toBe('The specialist `poet` does not exist or you do not have access to it.');
    // Chat completions still speak of models.
    expect((await (await chat({ model: 'poet' })).json()).error.message).toMatch(/^The model `poet`/);
  });

  it('say what was sent once', async () => {
    const res = await chat({ messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'x' } }] }] });
    const { error } = await res.json();
    expect(error.param).toBe('messages[0].content[0].type');
    expect(error.message).toBe(`Invalid 'messages[0].content[0].type': only 'text' content parts are supported, got "image_url".`);
  });
});

describe('uniqueItems', () => {
  const tags = (extra: Record<string, unknown>) => ({
    type: 'object',
    properties: { tags: { type: 'array', items: { type: 'string', maxLength: 8 }, maxItems: 2, ...extra } },
    required: ['tags'],
  });

  it('is refused with advice that works: "strict" changes nothing, removing the keyword does', async () => {
    for (const strict of [true, false]) {
      const res = await chat({ max_tokens: 60, response_format: { type: 'json_schema', json_schema: { name: 't', strict, schema: tags({ uniqueItems: true }) } } });
      expect(res.status).toBe(400);
      const { error } = await res.json();
      expect(error.param).toBe('response_format.json_schema.schema');
      expect(error.message).toContain('/properties/tags/uniqueItems');
      expect(error.message).toContain('remove "uniqueItems" from the schema and drop repeated items from the answer yourself');
      expect(error.message).not.toContain('strict');
    }
    const ok = await chat({ max_tokens: 60, response_format: { type: 'json_schema', json_schema: { name: 't', schema: tags({}) } } });
    expect(ok.status).toBe(200);
    const body = await ok.json();
    expect(body.choices[0].finish_reason).toBe('stop');
    expect(Array.isArray(JSON.parse(body.choices[0].message.content).tags)).toBe(true);
  }, 120_000);
});

describe('classify confidence', () => {
  const prompt = 'The box arrived crushed.';

  it('is reported for a whole label and not for an answer cut off before one', async () => {
    const whole = await (await infer({ specialist: 'classify', prompt })).json();
    expect(['positive', 'negative', 'neutral']).toContain(whole.result);
    expect(whole.confidence).toBeGreaterThan(0);

    // Every default label takes more than one token of this vocabulary.
    const cut = await (await infer({ specialist: 'classify', prompt, max_tokens: 1 })).json();
    expect(cut.finish_reason).toBe('length');
    expect(['positive', 'negative', 'neutral']).not.toContain(cut.result);
    expect(cut).not.toHaveProperty('confidence');

    // A caller's stop string that would cut inside every label does not apply to a guaranteed form: the
    // answer is still a whole label, with its confidence.
    const stopped = await (await infer({ specialist: 'classify', prompt, stop: ['ti', 'ut', 'ga'] })).json();
    expect(stopped.finish_reason).toBe('stop');
    expect(['positive', 'negative', 'neutral']).toContain(stopped.result);
    expect(stopped.confidence).toBeGreaterThan(0);

    const viaChat = await (await chat({ model: 'svc-classify', max_tokens: 1 })).json();
    expect(viaChat.choices[0].finish_reason).toBe('length');
    expect(viaChat.choices[0]).not.toHaveProperty('confidence');
  }, 120_000);
});
