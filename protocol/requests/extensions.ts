/**
 * Our own optional request fields, shaping a specialist's guaranteed output (docs/api.md, "Extension
 * fields"). Both endpoints take them; which specialists accept which is decided by the guardrail
 * (guardrails/plan.ts), so a field that cannot apply is a 400 naming it rather than ignored.
 */
import { z } from 'zod';
import { labelSetSchema, MAX_BULLETS, MAX_WORDS } from '../specialists/schema.ts';
import { orUndefined } from './sampling.ts';

export const extensionFields = {
  labels: labelSetSchema.nullish(),
  format: z.enum(['bullets', 'prose']).nullish(),
  max_bullets: z.number().int().min(1).max(MAX_BULLETS).nullish(),
  max_words: z.number().int().min(1).max(MAX_WORDS).nullish(),
  schema: z.record(z.string(), z.unknown()).nullish(),
  context: z.string().min(1).nullish(),
};

/** What a request asked of the output form; absent fields take the specialist's defaults. */
export interface OutputOptions {
  labels?: string[];
  format?: 'bullets' | 'prose';
  maxBullets?: number;
  maxWords?: number;
  schema?: Record<string, unknown>;
  context?: string;
}

/** The wire name of each option, for errors. */
export const OPTION_PARAMS: Record<keyof OutputOptions, string> = {
  labels: 'labels',
  format: 'format',
  maxBullets: 'max_bullets',
  maxWords: 'max_words',
  schema: 'schema',
  context: 'context',
};

type ExtensionInput = { [K in keyof typeof extensionFields]?: z.infer<(typeof extensionFields)[K]> };

export function outputOptionsFrom(r: ExtensionInput): OutputOptions {
  const o: OutputOptions = {
    labels: orUndefined(r.labels),
    format: orUndefined(r.format),
    maxBullets: orUndefined(r.max_bullets),
    maxWords: orUndefined(r.max_words),
    schema: orUndefined(r.schema),
    context: orUndefined(r.context),
  };
  for (const k of Object.keys(o) as (keyof OutputOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}
