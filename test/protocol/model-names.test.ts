import { describe, expect, it } from 'vitest';
import { LEGACY_MODEL_TABLE, specialistForModel } from '../../protocol/model-names.ts';
import { SPECIALIST_NAMES } from '../../protocol/specialists/schema.ts';

const known = (n: string) => (SPECIALIST_NAMES as readonly string[]).includes(n);

describe('model names', () => {
  it('accepts svc-<specialist> and the bare name for all six specialists', () => {
    for (const s of SPECIALIST_NAMES) {
      expect(specialistForModel(`svc-${s}`, known)).toBe(s);
      expect(specialistForModel(s, known)).toBe(s);
    }
  });

  it.each([
    'gpt-3.5-turbo', 'gpt-3.5-turbo-0125', 'gpt-3.5-turbo-1106', 'gpt-3.5-turbo-16k', 'gpt-3.5-turbo-16k-0613',
    'gpt-4', 'gpt-4-0613', 'gpt-4-32k', 'gpt-4-1106-preview', 'gpt-4-0125-preview', 'gpt-4-turbo-preview',
    'gpt-4-turbo', 'gpt-4-turbo-2024-04-09', 'gpt-4o', 'gpt-4o-2024-08-06', 'gpt-4o-2024-05-13', 'gpt-4o-mini', 'gpt-4o-mini-2024-07-18',
  ])('maps the legacy chat model %s to chat', (name) => {
    expect(specialistForModel(name, known)).toBe('chat');
  });

  it('documents an example that matches every row of the table', () => {
    for (const row of LEGACY_MODEL_TABLE) for (const ex of row.examples) expect(row.pattern.test(ex), ex).toBe(true);
  });

  it.each(['svc-', 'svc-poetry', 'SVC-chat', 'Chat', 'gpt-5', 'gpt-4o-realtime-preview', 'gpt-4o-audio-preview', 'gpt-3.5-turbo-instruct', 'o1', 'gpt-4o-2024-8-6', 'text-davinci-003', ' svc-chat', ''])(
    'rejects %j',
    (name) => {
      expect(specialistForModel(name, known)).toBeUndefined();
    },
  );
});
