/** The shared test models live in ../shared/models beside the checkout (SVC_SHARED_MODELS overrides). */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';

export const SHARED_MODELS = resolve(process.env.SVC_SHARED_MODELS ?? new URL('../../../shared/models', import.meta.url).pathname);

export function sharedModel(file: string): string {
  const p = resolve(SHARED_MODELS, file);
  if (!existsSync(p)) throw new Error(`test model ${file} not found in ${SHARED_MODELS} (set SVC_SHARED_MODELS)`);
  return p;
}
