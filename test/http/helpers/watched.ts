/** The real engine, watched: every generate() call's options are kept (optionally with a chat template the test models lack). */
import type { GenerateOptions, TextEngine } from '../../../engine/types.ts';

export type Watched = TextEngine & { calls: GenerateOptions[]; prompts(): string[] };

export function watched(inner: TextEngine, chatTemplate: string | undefined = inner.info.chatTemplate): Watched {
  const calls: GenerateOptions[] = [];
  return {
    calls,
    prompts: () => calls.map((c) => inner.tokenizer.decode(c.tokens ?? [])),
    info: { ...inner.info, chatTemplate },
    tokenizer: inner.tokenizer,
    dispose: () => Promise.resolve(),
    generate(o) {
      calls.push(o);
      return inner.generate(o);
    },
  };
}
