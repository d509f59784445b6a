/**
 * Which model names select which specialist. Accepted, case-sensitive:
 *   svc-<specialist>     the canonical name, e.g. svc-summarise
 *   <specialist>         the bare name, e.g. summarise
 *   the provider's legacy general-purpose chat models, all → chat (table below)
 * Anything else is 404 model_not_found.
 */
export const MODEL_PREFIX = 'svc-';

/**
 * Legacy chat model families and the dated or sized variants accepted for each. Every one maps to
 * `chat`: they are general-purpose assistants, and `chat` is the general-purpose specialist.
 */
export const LEGACY_MODEL_TABLE: readonly { family: string; pattern: RegExp; specialist: string; examples: string[] }[] = [
  { family: 'gpt-3.5-turbo', pattern: /^gpt-3\.5-turbo(-16k)?(-\d{4})?$/, specialist: 'chat', examples: ['gpt-3.5-turbo', 'gpt-3.5-turbo-0125', 'gpt-3.5-turbo-16k'] },
  { family: 'gpt-4', pattern: /^gpt-4(-32k)?(-\d{4})?$/, specialist: 'chat', examples: ['gpt-4', 'gpt-4-0613', 'gpt-4-32k'] },
  { family: 'gpt-4 previews', pattern: /^gpt-4-(\d{4}|turbo)-preview$/, specialist: 'chat', examples: ['gpt-4-1106-preview', 'gpt-4-0125-preview', 'gpt-4-turbo-preview'] },
  { family: 'gpt-4-turbo', pattern: /^gpt-4-turbo(-\d{4}-\d{2}-\d{2})?$/, specialist: 'chat', examples: ['gpt-4-turbo', 'gpt-4-turbo-2024-04-09'] },
  { family: 'gpt-4o', pattern: /^gpt-4o(-\d{4}-\d{2}-\d{2})?$/, specialist: 'chat', examples: ['gpt-4o', 'gpt-4o-2024-08-06'] },
  { family: 'gpt-4o-mini', pattern: /^gpt-4o-mini(-\d{4}-\d{2}-\d{2})?$/, specialist: 'chat', examples: ['gpt-4o-mini', 'gpt-4o-mini-2024-07-18'] },
];

/** The specialist a model name selects, or undefined when the name is not one of ours. */
export function specialistForModel(model: string, isSpecialist: (name: string) => boolean): string | undefined {
  if (model.startsWith(MODEL_PREFIX)) {
    const name = model.slice(MODEL_PREFIX.length);
    return isSpecialist(name) ? name : undefined;
  }
  if (isSpecialist(model)) return model;
  return LEGACY_MODEL_TABLE.find((row) => row.pattern.test(model))?.specialist;
}

export function modelIdFor(specialist: string): string {
  return MODEL_PREFIX + specialist;
}

/**
 * Fine-tuned models (protocol/fine-tuning): `ft:svc-<specialist>:acct-<account id>:<suffix>`, the
 * provider's `ft:<base>:<owner>:<suffix>` with our base model names. The suffix is made of
 * [a-z0-9_-] (sanitiseSuffix), so the name splits on ':' unambiguously. Such a name selects a model only
 * for its own account; the store decides, the grammar only says whether a name is of this kind.
 */
export const FINE_TUNED_PREFIX = 'ft:';
export const MAX_SUFFIX_CHARS = 40;

export function accountOwner(accountId: number): string {
  return `acct-${accountId}`;
}

export function fineTunedModelName(specialist: string, accountId: number, suffix: string): string {
  return `${FINE_TUNED_PREFIX}${modelIdFor(specialist)}:${accountOwner(accountId)}:${suffix}`;
}

export function isFineTunedModelName(model: string): boolean {
  return model.startsWith(FINE_TUNED_PREFIX);
}

/** The parts of a fine-tuned model name, or undefined when it does not follow the grammar. */
export function parseFineTunedModelName(model: string): { specialist: string; accountId: number; suffix: string } | undefined {
  const m = /^ft:svc-([a-z][a-z0-9_-]*):acct-([1-9][0-9]{0,15}):([a-z0-9_-]{1,64})$/.exec(model);
  return m ? { specialist: m[1], accountId: Number(m[2]), suffix: m[3] } : undefined;
}

/** A caller's suffix made safe for the name: lower case, runs of anything else as one '-', at most MAX_SUFFIX_CHARS. */
export function sanitiseSuffix(suffix: string): string {
  return suffix
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/-{2,}/g, '-')
    .slice(0, MAX_SUFFIX_CHARS)
    .replace(/^-+|-+$/g, '');
}
