/**
 * What a static site of the in-browser service is configured with (`svc-web.json` beside the page,
 * written by `svc web build`): the model's URL, the local account's plan, and the plans and specialists
 * the protocol needs (read from the repository at build time, as Node reads them at start). Checked
 * with zod where it enters.
 */
import { z } from 'zod';

export const WEB_CONFIG_FILE = 'svc-web.json';

export const webConfigSchema = z.strictObject({
  /** A GGUF on this origin or a CORS-enabled one; relative URLs are taken from the config's own URL. */
  model: z.strictObject({ url: z.string().min(1), id: z.string().min(1).optional() }),
  account: z
    .strictObject({
      plan: z.string().min(1),
      rpmLimit: z.number().int().positive().optional(),
      monthlyLimit: z.number().int().positive().optional(),
    })
    .default({ plan: 'scale' }),
  /** The plans file's JSON (config/plans.json). */
  plans: z.unknown(),
  /** The specialists' files (specialists/*.json) as text. */
  specialists: z.array(z.strictObject({ name: z.string().min(1), text: z.string() })).min(1),
  version: z.string().min(1),
  engine: z
    .strictObject({
      contextLength: z.number().int().positive().optional(),
      maxSequences: z.number().int().positive().max(64).optional(),
    })
    .default({}),
});

export type WebConfig = z.infer<typeof webConfigSchema>;

export function parseWebConfig(raw: unknown, source: string): WebConfig {
  const parsed = webConfigSchema.safeParse(raw);
  if (!parsed.success) throw new Error(`${source}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}
