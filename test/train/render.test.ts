/** Training conversations rendered as serving renders chats, with the loss on the assistant's tokens and end of turn. */
import { describe, expect, it } from 'vitest';
import { renderChat } from '../../engine/chat/index.ts';
import { renderTrainingExamples } from '../../engine/train/render.ts';
import type { TrainingConversation, TrainingExample } from '../../engine/train/types.ts';
import type { Tokenizer } from '../../engine/tokenizer/types.ts';
import { modelTokenizer } from '../tokenizer/load.ts';

/** The tokens the loss predicts (token t + 1 for every masked position t), as runs of consecutive tokens. */
function targetRuns(ex: TrainingExample): number[][] {
  const runs: number[][] = [];
  let run: number[] | null = null;
  for (let t = 0; t + 1 < ex.tokens.length; t++) {
    if (ex.lossMask[t]) (run ??= []).push(ex.tokens[t + 1]);
    else if (run) {
      runs.push(run);
      run = null;
    }
  }
  if (run) runs.push(run);
  return runs;
}

function one(t: Tokenizer, c: TrainingConversation, chatTemplate?: string): TrainingExample {
  const r = renderTrainingExamples({ tokenizer: t, chatTemplate }, [c], { maxTokens: 4096 });
  expect(r.problems).toEqual([]);
  expect(r.examples).toHaveLength(1);
  const ex = r.examples[0];
  expect(ex.lossMask).toHaveLength(ex.tokens.length);
  expect(ex.lossMask[ex.tokens.length - 1]).toBe(0);
  return ex;
}

describe('renderTrainingExamples, fallback format (models without a template)', () => {
  it('a single turn: the prompt is exactly what serving sends, the loss covers the reply and EOS', async () => {
    for (const model of ['stories260K.gguf', 'TinyStories-656K-Q8_0.gguf']) {
      const t = await modelTokenizer(model);
      const c: TrainingConversation = { messages: [{ role: 'system', content: 'Label the animal.' }, { role: 'user', content: 'The cat is happy.' }, { role: 'assistant', content: 'Label: cat' }] };
      const ex = one(t, c);
      const prompt = renderChat({ tokenizer: t }, c.messages.slice(0, 2)).tokens;
      expect([...ex.tokens.slice(0, prompt.length)]).toEqual(prompt);
      // Nothing before the reply is learned; every token after the prompt is.
      expect([...ex.lossMask.slice(0, prompt.length - 1)].every((m) => m === 0)).toBe(true);
      expect([...ex.lossMask.slice(prompt.length - 1, -1)].every((m) => m === 1)).toBe(true);
      const runs = targetRuns(ex);
      expect(runs).toHaveLength(1);
      expect(runs[0].at(-1)).toBe(t.eos);
      expect(t.decode(runs[0].slice(0, -1))).toBe('Label: cat');
      expect(ex.tokens.length).toBe(prompt.length + runs[0].length);
    }
  });

  it('several turns: each reply with the "\\n\\n### " that ends it, weight 0 replies left out', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const messages = [
      { role: 'user', content: 'The cat is happy.' },
      { role: 'assistant', content: 'Label: cat' },
      { role: 'user', content: 'A dog ran.' },
      { role: 'assistant', content: 'Label: dog' },
      { role: 'user', content: 'The bird sang.' },
      { role: 'assistant', content: 'Label: bird' },
    ] as const;
    const all = targetRuns(one(t, { messages }));
    expect(all.map((r) => t.decode(r.filter((id) => id !== t.eos)))).toEqual(['Label: cat\n\n### ', 'Label: dog\n\n### ', 'Label: bird']);
    expect(all[2].at(-1)).toBe(t.eos);
    // The masked tokens are the conversation's own tokens: tokenized once, as a whole.
    const full = renderChat({ tokenizer: t }, [...messages], { addGenerationPrompt: false });
    expect([...one(t, { messages }).tokens]).toEqual([...full.tokens, t.eos]);

    const skipped = targetRuns(one(t, { messages: messages.map((m, i) => (i === 3 ? { ...m, weight: 0 as const } : m)) }));
    expect(skipped.map((r) => t.decode(r))).toEqual(['Label: cat\n\n### ', 'Label: bird']);
    // A weight-0 last reply: nothing is appended, nothing after it is learned.
    const lastSkipped = one(t, { messages: messages.map((m, i) => (i === 5 ? { ...m, weight: 0 as const } : m)) });
    expect(lastSkipped.tokens.at(-1)).not.toBe(t.eos);
    expect(targetRuns(lastSkipped).map((r) => t.decode(r))).toEqual(['Label: cat\n\n### ', 'Label: dog\n\n### ']);
  });
});

describe('renderTrainingExamples, chat templates', () => {
  // A minimal template whose turns end with eos_token, as many instruction models' templates do.
  const TEMPLATE =
    "{% for m in messages %}<|{{ m.role }}|>\n{{ m.content }}{% if m.role == 'assistant' %}{{ eos_token }}{% endif %}\n{% endfor %}{% if add_generation_prompt %}<|assistant|>\n{% endif %}";

  it('the loss covers the reply and the template end-of-turn token, not the text after it', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const c: TrainingConversation = { messages: [{ role: 'user', content: 'Hi there.' }, { role: 'assistant', content: 'Label: hello' }, { role: 'user', content: 'Bye.' }, { role: 'assistant', content: 'Label: bye' }] };
    const ex = one(t, c, TEMPLATE);
    const full = renderChat({ tokenizer: t, chatTemplate: TEMPLATE }, [...c.messages], { addGenerationPrompt: false });
    expect(full.format).toBe('template');
    // The template's own end of turn ends the conversation: no EOS appended after its trailing newline.
    expect([...ex.tokens]).toEqual(full.tokens);
    const runs = targetRuns(ex);
    expect(runs.map((r) => r.at(-1))).toEqual([t.eos, t.eos]);
    expect(runs.map((r) => t.decode(r.slice(0, -1)))).toEqual(['Label: hello', 'Label: bye']);
    const prompt = renderChat({ tokenizer: t, chatTemplate: TEMPLATE }, c.messages.slice(0, 1)).tokens;
    expect([...ex.tokens.slice(0, prompt.length)]).toEqual(prompt);
    expect(ex.lossMask[prompt.length - 1]).toBe(1);
    expect(ex.lossMask[prompt.length - 2]).toBe(0);
  });

  it('a template that writes nothing after the last reply gets EOS appended', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const bare = '{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}assistant: {% endif %}';
    const ex = one(t, { messages: [{ role: 'user', content: 'Hi.' }, { role: 'assistant', content: 'Label: hi' }] }, bare);
    const runs = targetRuns(ex);
    expect(runs).toHaveLength(1);
    expect(runs[0].at(-1)).toBe(t.eos);
    // The template's own "\n" after the reply is its end of turn and is learned too.
    expect(t.decode(runs[0].slice(0, -1))).toBe('Label: hi\n');
  });
});

describe('renderTrainingExamples, problems', () => {
  it('names the line of a conversation too long once rendered or that cannot be rendered, and keeps the rest', async () => {
    const t = await modelTokenizer('stories260K.gguf');
    const ok = { line: 3, messages: [{ role: 'user', content: 'Hi.' }, { role: 'assistant', content: 'Label: hi' }] } as const;
    const long = { line: 7, messages: [{ role: 'user', content: 'word '.repeat(200) }, { role: 'assistant', content: 'Label: long' }] } as const;
    const first = { line: 9, messages: [{ role: 'assistant', content: 'Label: first' }, { role: 'user', content: 'Hi.' }] } as const;
    const r = renderTrainingExamples({ tokenizer: t }, [ok, long, first], { maxTokens: 100 });
    expect(r.examples).toHaveLength(1);
    expect(r.problems).toHaveLength(2);
    expect(r.problems[0]).toEqual({ line: 7, message: expect.stringMatching(/^the rendered conversation is \d+ tokens, more than the 100 allowed$/) });
    expect(r.problems[1]).toEqual({ line: 9, message: expect.stringMatching(/messages\[0\]: the conversation starts with an assistant message/) });
    // Without line numbers, a conversation is named by its 1-based position.
    const unnumbered = renderTrainingExamples({ tokenizer: t }, [{ messages: ok.messages }, { messages: long.messages }], { maxTokens: 100 });
    expect(unnumbered.problems.map((p) => p.line)).toEqual([2]);
  });
});
