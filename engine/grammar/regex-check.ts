/**
 * Whether xgrammar can turn a JSON-schema `pattern` into a grammar. Its regex converter aborts the wasm
 * instance on what it does not support, so we refuse those patterns first.
 */

/** Why the pattern cannot be used, or undefined if it can. */
export function unsupportedPattern(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
  } catch (e) {
    return `is not a valid regular expression (${(e as Error).message})`;
  }
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const n = pattern[i + 1] ?? '';
      if (!inClass && (n === 'b' || n === 'B')) return 'uses a word boundary (\\b, \\B), which grammars cannot express';
      if (!inClass && /[1-9]/.test(n)) return 'uses a backreference, which grammars cannot express';
      if (n === 'k' && pattern[i + 2] === '<') return 'uses a named backreference, which grammars cannot express';
      if (n === 'p' || n === 'P') return 'uses a Unicode property escape (\\p{...}), which xgrammar does not support';
      i++;
      continue;
    }
    if (inClass) {
      if (c === ']') inClass = false;
      continue;
    }
    if (c === '[') {
      inClass = true;
      // A "]" right after "[" or "[^" is a literal in the class.
      if (pattern[i + 1] === '^') i++;
      if (pattern[i + 1] === ']') i++;
      continue;
    }
    if (c === '(' && pattern[i + 1] === '?') {
      const look = pattern.slice(i + 2, i + 4);
      if (look.startsWith('=') || look.startsWith('!') || look === '<=' || look === '<!') return 'uses a lookaround assertion, which grammars cannot express';
    }
  }
  return undefined;
}
