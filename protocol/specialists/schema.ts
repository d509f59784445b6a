/**
 * What one specialist file (`specialists/<name>.json`) holds. The specialists issue extends this
 * (guardrails, output schemas, tools); unknown keys are rejected so a typo never silently does nothing.
 */
import { z } from 'zod';

/** The six specialists the spec names; the registry refuses to start without any of them. */
export const SPECIALIST_NAMES = ['classify', 'summarise', 'extract', 'qa', 'chat', 'code'] as const;

export const samplingSchema = z.strictObject({
  temperature: z.number().min(0).max(2).default(0.7),
  topP: z.number().gt(0).max(1).default(1),
  maxTokens: z.number().int().min(1).max(4096).default(512),
});

export const specialistFileSchema = z.strictObject({
  $comment: z.string().optional(),
  name: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'lowercase letters, digits, - and _'),
  description: z.string().min(1),
  /** Sent before the caller's messages; empty means none. */
  systemPrompt: z.string(),
  /** Defaults for parameters a request leaves out. */
  sampling: samplingSchema.prefault({}),
});

export type Specialist = z.infer<typeof specialistFileSchema>;
export type SamplingDefaults = z.infer<typeof samplingSchema>;
