/**
 * API keys: `svc_live_` (production) or `svc_test_` (sandbox) + 32 characters from [A-Za-z0-9]
 * (190 bits of randomness). The first 8 of those characters form the key's public prefix
 * (`svc_live_Ab3dE9xQ`), which names the key in listings and logs and finds its row; the remaining
 * 24 characters (142 bits) stay secret. Only the SHA-256 of the whole key is stored: with that much
 * entropy a fast hash is enough (nothing to brute-force), and it is compared in constant time.
 */
import { sha256 } from '@noble/hashes/sha2.js';
import { randomBase62 } from './ids.ts';

export type KeyMode = 'live' | 'test';

const RANDOM_CHARS = 32;
const PREFIX_RANDOM_CHARS = 8;
const KEY_PATTERN = /^svc_(live|test)_[A-Za-z0-9]{32}$/;

export interface NewKey {
  /** The secret, shown to its owner once. */
  key: string;
  prefix: string;
  hash: Uint8Array;
  mode: KeyMode;
}

export interface PresentedKey {
  prefix: string;
  hash: Uint8Array;
  mode: KeyMode;
}

export function generateKey(mode: KeyMode): NewKey {
  const key = `svc_${mode}_${randomBase62(RANDOM_CHARS)}`;
  return { key, prefix: keyPrefix(key), hash: hashKey(key), mode };
}

/** The parts of a well-formed key, or null when it cannot be one of ours. */
export function parseKey(presented: string): PresentedKey | null {
  if (!KEY_PATTERN.test(presented)) return null;
  return { prefix: keyPrefix(presented), hash: hashKey(presented), mode: presented.startsWith('svc_live_') ? 'live' : 'test' };
}

export function isWellFormedKey(s: string): boolean {
  return KEY_PATTERN.test(s);
}

/** SHA-256 of the key's UTF-8 bytes. Synchronous and platform-free (WebCrypto's digest is async only). */
export function hashKey(key: string): Uint8Array {
  return sha256(new TextEncoder().encode(key));
}

export function keyPrefix(key: string): string {
  return key.slice(0, 'svc_live_'.length + PREFIX_RANDOM_CHARS);
}

/** Equality in time that depends only on the length, never on where the bytes differ. */
export function hashesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}
