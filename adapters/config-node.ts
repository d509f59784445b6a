/**
 * The service's configuration read from disk in Node: plans (config/plans.json), specialists (one JSON
 * file each in specialists/) and the version (package.json). The protocol only parses what it is given,
 * so it also runs where there is no file system (a browser, a service worker).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parsePlans, type PlanCatalog } from '../protocol/plans.ts';
import { parseSpecialists, type SpecialistRegistry } from '../protocol/specialists/registry.ts';

export const DEFAULT_PLANS_PATH = fileURLToPath(new URL('../config/plans.json', import.meta.url));
export const DEFAULT_SPECIALISTS_DIR = fileURLToPath(new URL('../specialists/', import.meta.url));

export function loadPlans(path: string = DEFAULT_PLANS_PATH): PlanCatalog {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read plans from ${path}: ${(e as Error).message}`);
  }
  return parsePlans(raw, path);
}

export function loadSpecialists(dir: string = DEFAULT_SPECIALISTS_DIR): SpecialistRegistry {
  let names: string[];
  try {
    names = readdirSync(dir).filter((f) => f.endsWith('.json')).sort();
  } catch (e) {
    throw new Error(`cannot read specialists folder ${dir}: ${(e as Error).message}`);
  }
  return parseSpecialists(names.map((name) => ({ name, path: join(dir, name), text: readFileSync(join(dir, name), 'utf8') })));
}

/** The service version: package.json's, reported by /health. */
export function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string' || !/^\d+\.\d+\.\d+/.test(pkg.version)) throw new Error('package.json has no x.y.z version');
  return pkg.version;
}
