/** Errors of grammar-constrained decoding: which are the caller's fault (400) and which are ours. */
import { EngineInputError } from '../types.ts';

/**
 * A grammar, JSON schema or tool list the caller sent cannot be used: invalid, unsupported, or impossible
 * with this model's vocabulary. `param` names the part of the grammar spec at fault (`schema`, `grammar`,
 * `tools`, ...); the message says what was wrong and where (a JSON pointer into the schema).
 */
export class GrammarInputError extends EngineInputError {
  constructor(message: string, param: string) {
    super(message, param);
    this.name = 'GrammarInputError';
  }
}

/** xgrammar failed on input our own checks let through, or the grammar engine broke: a server-side fault. */
export class GrammarEngineError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GrammarEngineError';
  }
}

/** Too many grammars are waiting to be compiled: try again shortly (a 503, not the caller's input). */
export class GrammarBusyError extends Error {
  constructor(
    message: string,
    /** Seconds after which a retry is sensible. */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
    this.name = 'GrammarBusyError';
  }
}
