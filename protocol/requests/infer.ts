/**
 * `POST /v1/infer` request: a specialist name and a prompt, the sampling fields chat completions takes,
 * and our extension fields. The endpoint is ours, so an unknown field is a 400 naming it (a typo such
 * as `label` for `labels` must not silently change nothing).
 */
import { z } from 'zod';
import { invalidRequest } from '../errors.ts';
import { extensionFields, outputOptionsFrom, type OutputOptions } from './extensions.ts';
import { issuesToError } from './issues.ts';
import { maxTokens, penalty, samplingFrom, seed, stop, temperature, topP, type SamplingRequest } from './sampling.ts';

/** What a conversation is called: chosen by the caller, scoped to the API key. */
export const CONVERSATION_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const fields = {
  specialist: z.string().min(1).optional(),
  /** A fine-tuned model (`ft:svc-<specialist>:…`), run as its specialist with its adapter; instead of, or beside, `specialist`. */
  model: z.string().min(1).max(256).optional(),
  prompt: z.string().min(1),
  max_tokens: maxTokens,
  temperature,
  top_p: topP,
  seed,
  stop,
  presence_penalty: penalty,
  frequency_penalty: penalty,
  stream: z.boolean().nullish(),
  conversation_id: z.string().regex(CONVERSATION_ID, 'must be 1-128 characters of letters, digits, ".", "_", ":" or "-"').nullish(),
  ...extensionFields,
};

const schema = z.object(fields);

export interface InferRequest extends SamplingRequest {
  /** Given, or (with only `model`) the fine-tuned model's specialist, filled in by the handler. */
  specialist: string | undefined;
  model?: string;
  prompt: string;
  conversationId?: string;
  output: OutputOptions;
}

export function parseInferRequest(body: unknown): InferRequest {
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const unknown = Object.keys(body).filter((k) => !Object.hasOwn(fields, k));
    if (unknown.length > 0) {
      throw invalidRequest(
        // The first few only: a body of 100000 stray keys must not come back as a 1 MB message.
        `Unknown parameter${unknown.length > 1 ? 's' : ''}: ${unknown.slice(0, 5).map((k) => `'${k.slice(0, 64)}'`).join(', ')}${unknown.length > 5 ? ` and ${unknown.length - 5} more` : ''}. /v1/infer accepts ${Object.keys(fields).map((k) => `'${k}'`).join(', ')}.`,
        unknown[0].slice(0, 64),
      );
    }
  }
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw issuesToError(parsed.error.issues, body);
  const r = parsed.data;
  if (r.stream === true) throw invalidRequest("Streaming is not available on /v1/infer; use /v1/chat/completions with 'stream': true.", 'stream');
  if (r.specialist === undefined && r.model === undefined) throw invalidRequest("Missing required parameter: 'specialist'.", 'specialist');
  return {
    specialist: r.specialist,
    ...(r.model !== undefined ? { model: r.model } : {}),
    prompt: r.prompt,
    ...samplingFrom(r, r.max_tokens),
    ...(r.conversation_id != null ? { conversationId: r.conversation_id } : {}),
    output: outputOptionsFrom(r),
  };
}
