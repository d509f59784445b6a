/**
 * The specialist file format (`specialists/<name>.json`): what a specialist is, as plain configuration a
 * user can copy to add their own. Unknown keys are rejected so a typo never silently does nothing.
 * docs/api.md ("Specialist files") documents every field.
 */
import { z } from 'zod';

/** The six specialists the spec names; the registry refuses to start without any of them. */
export const SPECIALIST_NAMES = ['classify', 'summarise', 'extract', 'qa', 'chat', 'code'] as const;

export const MAX_BULLETS = 50;
export const MAX_WORDS = 2000;
export const MAX_SPANS = 20;

export const samplingSchema = z.strictObject({
  temperature: z.number().min(0).max(2).default(0.7),
  topP: z.number().gt(0).max(1).default(1),
  maxTokens: z.number().int().min(1).max(4096).default(512),
});

/** A label: one line of text. Shared with the request field `labels` (requests/extensions.ts). */
export const labelSchema = z
  .string()
  .min(1)
  .max(100)
  .refine((l) => !/[\r\n]/.test(l) && l.trim() === l, 'labels are one line, without leading or trailing spaces');

export const labelSetSchema = z
  .array(labelSchema)
  .min(2)
  .max(100)
  .refine((ls) => new Set(ls).size === ls.length, 'labels must be different from each other');

/**
 * The guaranteed form of every answer, enforced by a grammar (protocol/guardrails/), never hoped for:
 * - none: free text.
 * - labels: exactly one label of the set (requests may bring their own set).
 * - summary: `- ` bullet lines, or one paragraph, within a word count.
 * - json: one JSON object, valid under `schema` when there is one.
 * - grounded: sentences quoted verbatim from the context, or exactly `notFoundAnswer`.
 * - fenced-code: starts with a ``` fenced code block; text and more blocks may follow.
 */
export const guardrailSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('none') }),
  z.strictObject({ kind: z.literal('labels'), labels: labelSetSchema }),
  z.strictObject({
    kind: z.literal('summary'),
    format: z.enum(['bullets', 'prose']).default('bullets'),
    maxBullets: z.number().int().min(1).max(MAX_BULLETS).default(5),
    /** Words in the whole summary (bullets share them). */
    maxWords: z.number().int().min(1).max(MAX_WORDS).default(100),
  }),
  z.strictObject({ kind: z.literal('json'), schema: z.record(z.string(), z.unknown()).optional() }),
  z.strictObject({
    kind: z.literal('grounded'),
    notFoundAnswer: z.string().min(1).max(500),
    maxSentences: z.number().int().min(1).max(MAX_SPANS).default(3),
  }),
  z.strictObject({ kind: z.literal('fenced-code') }),
]);

export const specialistFileSchema = z.strictObject({
  $comment: z.string().optional(),
  name: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'lowercase letters, digits, - and _'),
  description: z.string().min(1),
  /** Sent before the caller's messages; empty means none. */
  systemPrompt: z.string(),
  /** Defaults for parameters a request leaves out. */
  sampling: samplingSchema.prefault({}),
  /** A request's max_tokens above this is lowered to it (finish_reason `length` says when it bit). */
  maxTokensLimit: z.number().int().min(1).max(4096).optional(),
  guardrail: guardrailSchema.prefault({ kind: 'none' }),
  /** `/v1/infer` keeps a conversation's turns in the database under a `conversation_id`. */
  memory: z.boolean().default(false),
});

export type Specialist = z.infer<typeof specialistFileSchema>;
export type SamplingDefaults = z.infer<typeof samplingSchema>;
export type Guardrail = z.infer<typeof guardrailSchema>;
