/** Where the shared test models live: `../shared/models` beside the project root, or SVC_TEST_MODELS. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const MODELS_DIR = process.env.SVC_TEST_MODELS ?? fileURLToPath(new URL('../../../shared/models', import.meta.url));

export function sharedModel(file: string): string {
  const p = join(MODELS_DIR, file);
  if (!existsSync(p)) throw new Error(`shared test model not found: ${p} (set SVC_TEST_MODELS to the folder holding it)`);
  return p;
}
