/**
 * EBNF for JSON strings with minLength / maxLength. xgrammar 0.1.27's own version allows raw control
 * characters inside the string (its character class lacks \0-\x1f), which is invalid JSON.
 *
 * Length counts characters of the decoded string, as JSON Schema does: an escape is one character;
 * \u escapes of surrogates are left out, since a pair would count as two here and as one code point
 * in a validator.
 *
 * Written as a chain of rules, one per length, not as xgrammar's repetition `c{0,n}`: on a 32000-token
 * vocabulary the repetition costs 7 ms per token at n = 32 and 700 ms at n = 256; the chain 4.5 and 11.
 * A plain string costs 0.3 ms, so lengths above MAX_CHAIN are refused (or dropped when not strict).
 */

export const MAX_CHAIN = 512;

/** Rules named `${name}` (the string) plus `${name}_0`... and helpers `${name}_c`, `${name}_e`, `${name}_h`. */
export function stringLengthRules(minLength: number, maxLength: number | undefined, name: string): string {
  const lines = [`${name} ::= "\\"" ${name}_0`];
  const last = maxLength ?? minLength;
  for (let k = 0; k <= last; k++) {
    const alts: string[] = [];
    if (k >= minLength) alts.push('"\\""');
    if (maxLength === undefined && k === last) alts.push(`${name}_c ${name}_${k}`); // no maximum: loop
    else if (k < last) alts.push(`${name}_c ${name}_${k + 1}`);
    lines.push(`${name}_${k} ::= ${alts.join(' | ')}`);
  }
  lines.push(
    `${name}_c ::= [^\\0-\\x1f\\"\\\\] | "\\\\" ${name}_e`,
    `${name}_e ::= ["\\\\/bfnrt] | "u" ${name}_h`,
    `${name}_h ::= [0-9A-Ca-c] [0-9A-Fa-f]{3} | [Dd] [0-7] [0-9A-Fa-f]{2} | [E-Fe-f] [0-9A-Fa-f]{3}`,
  );
  return lines.join('\n');
}
