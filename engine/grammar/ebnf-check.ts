/**
 * A syntax check of EBNF/GBNF grammar text before xgrammar parses it (its parser aborts the wasm instance
 * on an error instead of throwing). The dialect is xgrammar's, which reads llama.cpp's GBNF too:
 *
 *     root  ::= "{" ws pair (ws "," ws pair)* ws "}"   # comments run to the end of the line
 *     pair  ::= [a-z]+ ws ":" ws ("true" | "false")
 *     ws    ::= [ \t\n]*
 *
 * Strings "..." and classes [...] with \n \t \r \\ \" \xHH \uHHHH \UHHHHHHHH escapes, groups ( ),
 * alternatives |, repetition * + ? {n} {n,} {n,m}, references to rules, and a lookahead (= ...) at the
 * end of a rule. The error names the line and column.
 */
import { GrammarInputError } from './errors.ts';

const NAME_START = /[A-Za-z_]/;
const NAME_CHAR = /[A-Za-z0-9_.\-]/;

class EbnfChecker {
  private i = 0;
  readonly defined = new Map<string, number>();
  readonly used = new Map<string, number>();

  constructor(
    private readonly src: string,
    private readonly param: string,
  ) {}

  fail(what: string, at = this.i): never {
    const before = this.src.slice(0, at);
    const line = before.split('\n').length;
    const column = at - before.lastIndexOf('\n');
    throw new GrammarInputError(`${this.param}: ${what} at line ${line}, column ${column}`, this.param);
  }

  private skipSpace(): void {
    for (;;) {
      const c = this.src[this.i];
      if (c === ' ' || c === '\t' || c === '\n' || c === '\r') this.i++;
      else if (c === '#') while (this.i < this.src.length && this.src[this.i] !== '\n') this.i++;
      else return;
    }
  }

  /** A rule name followed by ::= starts the next rule. */
  private atRuleStart(): boolean {
    const m = /^[A-Za-z_][A-Za-z0-9_.\-]*[ \t]*::=/.exec(this.src.slice(this.i, this.i + 300));
    return m !== null;
  }

  private name(): string {
    const start = this.i;
    if (!NAME_START.test(this.src[this.i] ?? '')) this.fail('expected a rule name');
    while (this.i < this.src.length && NAME_CHAR.test(this.src[this.i])) this.i++;
    return this.src.slice(start, this.i);
  }

  check(root: string): void {
    this.skipSpace();
    if (this.i >= this.src.length) this.fail('the grammar is empty');
    while (this.i < this.src.length) {
      const at = this.i;
      const name = this.name();
      if (this.defined.has(name)) this.fail(`rule "${name}" is defined twice`, at);
      this.defined.set(name, at);
      this.skipSpace();
      if (!this.src.startsWith('::=', this.i)) this.fail(`expected "::=" after rule name "${name}"`);
      this.i += 3;
      this.alternatives(true);
      this.skipSpace();
    }
    for (const [name, at] of this.used) if (!this.defined.has(name)) this.fail(`rule "${name}" is used but not defined`, at);
    if (!this.defined.has(root)) throw new GrammarInputError(`${this.param}: there is no rule named "${root}" (the root rule)`, this.param);
  }

  /** alt ("|" alt)*; at the top of a rule the body ends where the next rule starts. */
  private alternatives(top: boolean): void {
    for (;;) {
      const n = this.sequence(top);
      if (n === 0) this.fail('expected an element (use "" for the empty string)');
      this.skipSpace();
      if (this.src[this.i] !== '|') return;
      this.i++;
    }
  }

  private sequence(top: boolean): number {
    let n = 0;
    for (;;) {
      this.skipSpace();
      const c = this.src[this.i];
      if (c === undefined || c === '|' || c === ')') return n;
      if (top && this.atRuleStart()) return n;
      if (c === '(' && this.src[this.i + 1] === '=') {
        this.lookahead(top);
        return n;
      }
      this.element();
      this.repetition();
      n++;
    }
  }

  private lookahead(top: boolean): void {
    const at = this.i;
    if (!top) this.fail('a lookahead (= ...) may only end a rule', at);
    this.i += 2;
    const before = this.i;
    this.alternatives(false);
    if (this.src[this.i] !== ')') this.fail('expected ")" to close the lookahead');
    this.i++;
    if (/^\s*""\s*$/.test(this.src.slice(before, this.i - 1))) this.fail('a lookahead may not be the empty string', at);
    this.skipSpace();
    if (this.i < this.src.length && !this.atRuleStart()) this.fail('a lookahead (= ...) may only end a rule', at);
  }

  private element(): void {
    const c = this.src[this.i];
    if (c === '"') return this.string();
    if (c === '[') return this.charClass();
    if (c === '(') {
      this.i++;
      this.alternatives(false);
      this.skipSpace();
      if (this.src[this.i] !== ')') this.fail('expected ")"');
      this.i++;
      return;
    }
    if (c !== undefined && NAME_START.test(c)) {
      const at = this.i;
      const name = this.name();
      if (this.src[this.i] === '(') this.fail(`"${name}(...)" is not supported`, at);
      if (!this.used.has(name)) this.used.set(name, at);
      return;
    }
    if (c === "'") this.fail("strings use double quotes");
    this.fail(`unexpected character ${JSON.stringify(c)}`);
  }

  private repetition(): void {
    const c = this.src[this.i];
    if (c === '*' || c === '+' || c === '?') {
      this.i++;
      return;
    }
    if (c !== '{') return;
    const m = /^\{\s*(\d+)\s*(?:(,)\s*(\d*)\s*)?\}/.exec(this.src.slice(this.i, this.i + 40));
    if (!m) this.fail('expected a repetition {n}, {n,} or {n,m}');
    if (m[3] && Number(m[3]) < Number(m[1])) this.fail(`repetition {${m[1]},${m[3]}} has its maximum below its minimum`);
    this.i += m[0].length;
  }

  private string(): void {
    const start = this.i;
    this.i++;
    for (;;) {
      const c = this.src[this.i];
      if (c === undefined || c === '\n') this.fail('unterminated string', start);
      if (c === '"') {
        this.i++;
        return;
      }
      if (c === '\\') this.escape(false);
      else this.i++;
    }
  }

  private charClass(): void {
    const start = this.i;
    this.i++;
    if (this.src[this.i] === '^') this.i++;
    let prev: number | undefined;
    let rangeFrom: number | undefined;
    let any = false;
    for (;;) {
      const c = this.src[this.i];
      if (c === undefined || c === '\n') this.fail('unterminated character class', start);
      if (c === ']' && (any || this.src[this.i - 1] !== '[')) {
        if (rangeFrom !== undefined) this.fail('character range is missing its end');
        this.i++;
        return;
      }
      if (c === '-' && prev !== undefined && rangeFrom === undefined && this.src[this.i + 1] !== ']') {
        rangeFrom = prev;
        this.i++;
        continue;
      }
      const at = this.i;
      const cp = c === '\\' ? this.escape(true) : this.char();
      if (rangeFrom !== undefined) {
        if (cp < rangeFrom) this.fail('character range runs backwards', at);
        rangeFrom = undefined;
        prev = undefined;
      } else {
        prev = cp;
      }
      any = true;
    }
  }

  private char(): number {
    const cp = this.src.codePointAt(this.i)!;
    this.i += cp > 0xffff ? 2 : 1;
    return cp;
  }

  /** One escape sequence; returns the code point. Classes also take \] \[ \- \^ \/ (strings do not). */
  private escape(inClass: boolean): number {
    const at = this.i;
    const c = this.src[this.i + 1];
    const simple: Record<string, number> = { n: 10, t: 9, r: 13, '\\': 92, '"': 34, "'": 39, b: 8, f: 12, v: 11, '0': 0, a: 7, e: 27 };
    const classOnly: Record<string, number> = { ']': 93, '[': 91, '-': 45, '^': 94, '/': 47 };
    if (inClass && c !== undefined && c in classOnly) {
      this.i += 2;
      return classOnly[c];
    }
    if (c !== undefined && c in simple) {
      this.i += 2;
      return simple[c];
    }
    const hex = c === 'x' ? 2 : c === 'u' ? 4 : c === 'U' ? 8 : 0;
    if (hex > 0) {
      const digits = this.src.slice(this.i + 2, this.i + 2 + hex);
      if (!new RegExp(`^[0-9A-Fa-f]{${hex}}$`).test(digits)) this.fail(`\\${c} needs ${hex} hex digits`, at);
      this.i += 2 + hex;
      return parseInt(digits, 16);
    }
    this.fail(`unknown escape \\${c ?? ''}`, at);
  }
}

/** Throws GrammarInputError (with line and column) unless the grammar parses and every rule is defined. */
export function checkEbnf(source: string, root = 'root', param = 'grammar'): void {
  if (typeof source !== 'string') throw new GrammarInputError(`${param} must be a string`, param);
  new EbnfChecker(source, param).check(root);
}
