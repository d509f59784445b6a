/**
 * Several kernels' WGSL in one shader (kernels/ffn-chain.ts runs three products in one dispatch): each
 * kernel's module-scope names get a suffix of their own, and its bindings are renumbered onto the
 * shader's, where two kernels that bind the same buffer share one declaration (WebGPU refuses a buffer
 * bound twice where either binding is writable).
 */

/** Module-scope declarations: `fn`, `var`, `const`, `override`, `struct`, `alias` outside every brace. */
export function moduleNames(code: string): Set<string> {
  const names = new Set<string>();
  let depth = 0;
  const re = /[{}]|\b(?:fn|var|const|override|struct|alias)\b(?:\s*<[^>]*>)?\s+([A-Za-z_][A-Za-z0-9_]*)/g;
  for (let m; (m = re.exec(stripComments(code))); ) {
    if (m[0] === '{') depth++;
    else if (m[0] === '}') depth--;
    else if (depth === 0) names.add(m[1]);
  }
  return names;
}

export function stripComments(code: string): string {
  return code.replace(/\/\/[^\n]*/g, '');
}

/**
 * `code` with every module-scope name but those in `keep` followed by `suffix`, wherever it is used
 * (not after a `.`: struct members and swizzles keep theirs). Locals that shadow a module-scope name are
 * renamed with it, consistently, so the meaning is unchanged.
 */
export function namespaceWgsl(code: string, suffix: string, keep: ReadonlySet<string> = new Set()): string {
  const plain = stripComments(code);
  const names = moduleNames(plain);
  for (const k of keep) names.delete(k);
  return plain.replace(/(\.\s*)?\b([A-Za-z_][A-Za-z0-9_]*)\b/g, (all, dot: string | undefined, id: string) => (dot !== undefined || !names.has(id) ? all : `${id}${suffix}`));
}

/** Where one of a kernel's group(0) bindings goes in the joined shader. */
export interface Rebinding {
  /** The shader's binding number. */
  binding: number;
  /** Set where another kernel already declares this binding: this kernel's name for it becomes that one. */
  sameAs?: string;
}

/**
 * `code` (one kernel, already namespaced) with each `@group(0) @binding(n) var... name: type;` moved to
 * `map[n].binding`, or removed and its name replaced by `map[n].sameAs`. Every binding must be mapped.
 * Storage reads become read_write: in the joined shader a buffer one kernel reads another may write.
 */
export function rebindWgsl(code: string, map: Readonly<Record<number, Rebinding>>): string {
  const renames: [string, string][] = [];
  const out = code.replace(/@group\(0\) @binding\((\d+)\) var(<[^>]*>)? ([A-Za-z_][A-Za-z0-9_]*)\s*:\s*([^;]+);/g, (_, n: string, access: string | undefined, name: string, type: string) => {
    const m = map[Number(n)];
    if (!m) throw new Error(`rebindWgsl: binding ${n} (${name}) has no place in the joined shader`);
    if (m.sameAs !== undefined) {
      renames.push([name, m.sameAs]);
      return '';
    }
    return `@group(0) @binding(${m.binding}) var${(access ?? '').replace('<storage, read>', '<storage, read_write>')} ${name}: ${type};`;
  });
  return renames.reduce((c, [from, to]) => c.replace(new RegExp(`(?<![.\\w])${from}\\b`, 'g'), to), out);
}
