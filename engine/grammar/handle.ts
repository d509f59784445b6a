/**
 * The grammar API the protocol layer programs against, whether grammars run in this thread
 * (compileGrammar) or in workers (isolated/isolated-grammars.ts).
 */
import type { TokenConstraint } from '../types.ts';
import { compileGrammar } from './compile.ts';
import type { ConstraintOptions } from './constraint.ts';
import type { GrammarTokenizer } from './token-table.ts';
import type { GrammarSpec } from './spec.ts';

export interface ConstraintHandle extends TokenConstraint {
  /** Why the grammar could not go on (the vocabulary cannot write what it needs), or undefined. */
  readonly deadEnd: string | undefined;
  /** The grammar is complete. */
  readonly complete: boolean;
  dispose(): void;
}

export interface GrammarHandle {
  /** Keywords dropped or approximated (non-strict schemas). */
  readonly warnings: readonly string[];
  readonly compileMs: number;
  createConstraint(opts?: ConstraintOptions): Promise<ConstraintHandle>;
}

export interface GrammarCompiler {
  /** Throws GrammarInputError (a 400) for grammars that are invalid, too big or too costly to compile. */
  compile(spec: GrammarSpec): Promise<GrammarHandle>;
  /** Start whatever runs the grammars (workers) ahead of the first request. */
  warm?(): Promise<void>;
  dispose?(): void;
}

/** Grammars compiled and matched in this thread (browsers, tests, the CLI). */
export function inProcessGrammars(tokenizer: GrammarTokenizer): GrammarCompiler {
  return { compile: (spec) => compileGrammar(tokenizer, spec) };
}
