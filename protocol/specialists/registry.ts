/** The specialists the service offers, parsed once at start from one JSON file per specialist. */
import { z } from 'zod';
import { prepareJsonSchema } from '../../engine/grammar/index.ts';
import { SPECIALIST_NAMES, specialistFileSchema, type Specialist } from './schema.ts';

export class SpecialistRegistry {
  private readonly byName: ReadonlyMap<string, Specialist>;

  constructor(specialists: readonly Specialist[]) {
    const map = new Map<string, Specialist>();
    for (const s of specialists) {
      if (map.has(s.name)) throw new Error(`specialist "${s.name}" is defined twice`);
      map.set(s.name, s);
    }
    const missing = SPECIALIST_NAMES.filter((n) => !map.has(n));
    if (missing.length) throw new Error(`specialists missing: ${missing.join(', ')} (each needs a file <name>.json)`);
    this.byName = map;
  }

  get(name: string): Specialist | undefined {
    return this.byName.get(name);
  }

  has(name: string): boolean {
    return this.byName.has(name);
  }

  /** Names in a stable order: the spec's six first, then any others alphabetically. */
  names(): string[] {
    const spec = SPECIALIST_NAMES.filter((n) => this.byName.has(n)) as string[];
    const extra = [...this.byName.keys()].filter((n) => !spec.includes(n)).sort();
    return [...spec, ...extra];
  }
}

/** One specialist file as read by the caller: its file name and text. */
export interface SpecialistFile {
  name: string;
  text: string;
  /** Where it came from, for error messages (default: the name). */
  path?: string;
}

/**
 * The registry from the specialist files' texts (one JSON file per specialist, named `<name>.json`).
 * Reading them is the caller's job (adapters/config-node.ts in Node), so the protocol runs anywhere.
 */
export function parseSpecialists(files: readonly SpecialistFile[]): SpecialistRegistry {
  const specialists = files.map((f) => {
    const path = f.path ?? f.name;
    let raw: unknown;
    try {
      raw = JSON.parse(f.text);
    } catch (e) {
      throw new Error(`${path}: not valid JSON (${(e as Error).message})`);
    }
    const parsed = specialistFileSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`${path}:\n${z.prettifyError(parsed.error)}`);
    if (`${parsed.data.name}.json` !== f.name) throw new Error(`${path}: name "${parsed.data.name}" does not match the file name`);
    checkGuardrail(parsed.data, path);
    return parsed.data;
  });
  return new SpecialistRegistry(specialists);
}

/** A schema the grammar cannot enforce is a mistake in the file: refused at start, not on the first request. */
function checkGuardrail(s: Specialist, path: string): void {
  if (s.guardrail.kind !== 'json' || s.guardrail.schema === undefined) return;
  try {
    prepareJsonSchema(s.guardrail.schema, { strict: true, param: 'guardrail.schema' });
  } catch (e) {
    throw new Error(`${path}: ${(e as Error).message}`);
  }
}
