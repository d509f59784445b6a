/**
 * Commander option parsers that reject bad values with a message naming the option and what it takes.
 * Commander's own prefix already quotes the value ("argument 'x' is invalid."), so these do not repeat it.
 */
import { InvalidArgumentError } from 'commander';

export function intOption(name: string, min = -Infinity, max = Infinity) {
  return (value: string): number => {
    const n = Number(value);
    if (!/^-?\d+$/.test(value.trim()) || !Number.isSafeInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be an integer${min > -Infinity ? ` ≥ ${min}` : ''}${max < Infinity ? ` and ≤ ${max}` : ''}`);
    }
    return n;
  };
}

export function floatOption(name: string, min: number, max: number) {
  return (value: string): number => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isFinite(n) || n < min || n > max) {
      throw new InvalidArgumentError(`${name} must be a number from ${min} to ${max}`);
    }
    return n;
  };
}

/** pino's levels, for --log-level and $SVC_LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
/** The WebGPU adapters a Node process can choose (engine/gpu/select.ts has `browser` too). */
export const NODE_ADAPTERS = ['auto', 'gpu', 'swiftshader', 'llvmpipe'] as const;

/** `value` when it is one of `choices`, else an error naming the option (or variable) and listing the valid values. */
export function checkChoice<T extends string>(name: string, value: string, choices: readonly T[], quoteValue = true): T {
  const v = value.trim().toLowerCase();
  if (!(choices as readonly string[]).includes(v)) throw new InvalidArgumentError(`${name} must be one of ${choices.join(', ')}${quoteValue ? ` (got "${value}")` : ''}`);
  return v as T;
}

export function choiceOption<T extends string>(name: string, choices: readonly T[]) {
  return (value: string): T => checkChoice(name, value, choices, false);
}
