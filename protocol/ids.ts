/**
 * Identifiers handed to clients: random, URL-safe, prefixed by what they name. Randomness from WebCrypto
 * (`crypto.getRandomValues`, in Node and browsers alike), so the protocol runs anywhere.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** `length` characters from [A-Za-z0-9], uniformly (rejection sampling avoids modulo bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of crypto.getRandomValues(new Uint8Array(length * 2))) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

export function completionId(): string {
  return `chatcmpl-${randomBase62(24)}`;
}

export function inferenceId(): string {
  return `inf_${randomBase62(24)}`;
}
