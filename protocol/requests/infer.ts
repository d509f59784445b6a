/** `POST /v1/infer` request: a specialist name and a prompt, plus the sampling fields chat completions takes. */
import { z } from 'zod';
import { invalidRequest } from '../errors.ts';
import { issuesToError } from './issues.ts';
import { maxTokens, penalty, samplingFrom, seed, stop, temperature, topP, type SamplingRequest } from './sampling.ts';

const schema = z.object({
  specialist: z.string().min(1),
  prompt: z.string().min(1),
  max_tokens: maxTokens,
  temperature,
  top_p: topP,
  seed,
  stop,
  presence_penalty: penalty,
  frequency_penalty: penalty,
  stream: z.boolean().nullish(),
});

export interface InferRequest extends SamplingRequest {
  specialist: string;
  prompt: string;
}

export function parseInferRequest(body: unknown): InferRequest {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw issuesToError(parsed.error.issues, body);
  const r = parsed.data;
  if (r.stream === true) throw invalidRequest("Streaming is not available on /v1/infer; use /v1/chat/completions with 'stream': true.", 'stream');
  return {
    specialist: r.specialist,
    prompt: r.prompt,
    ...samplingFrom(r, r.max_tokens),
  };
}
