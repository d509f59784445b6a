import { describe, expect, it } from 'vitest';
import { billingPeriodAt } from '../../protocol/billing-period.ts';
import { generateKey, hashesEqual, hashKey, parseKey } from '../../protocol/keys.ts';
import { FALLBACK_STOP, renderFallback } from '../../engine/chat/index.ts';

describe('API keys', () => {
  it('are svc_live_/svc_test_ + 32 base62 characters (190 bits), hashed with SHA-256', () => {
    const live = generateKey('live');
    const test = generateKey('test');
    expect(live.key).toMatch(/^svc_live_[A-Za-z0-9]{32}$/);
    expect(test.key).toMatch(/^svc_test_[A-Za-z0-9]{32}$/);
    expect(live.prefix).toBe(live.key.slice(0, 17));
    expect(Array.from(live.hash)).toEqual(Array.from(hashKey(live.key)));
    expect(live.hash).toHaveLength(32);
  });

  it('do not repeat and use the whole alphabet', () => {
    const keys = Array.from({ length: 2000 }, () => generateKey('live').key.slice(9));
    expect(new Set(keys).size).toBe(keys.length);
    const chars = new Set(keys.join(''));
    expect(chars.size).toBe(62);
  });

  it('parse only when well formed', () => {
    const k = generateKey('test');
    expect(parseKey(k.key)).toMatchObject({ prefix: k.prefix, mode: 'test' });
    for (const bad of ['', k.key + 'x', k.key.slice(0, -1), k.key.replace('svc_test_', 'svc_prod_'), k.key.replace(/.$/, '-'), `Bearer ${k.key}`]) {
      expect(parseKey(bad)).toBeNull();
    }
  });

  it('compare hashes of any length safely', () => {
    // SHA-256 of the UTF-8 bytes, as any other implementation computes it (FIPS 180-2 test vector).
    expect(Array.from(hashKey('abc'), (b) => b.toString(16).padStart(2, '0')).join('')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    const a = hashKey('a');
    expect(hashesEqual(a, hashKey('a'))).toBe(true);
    expect(hashesEqual(a, hashKey('b'))).toBe(false);
    expect(hashesEqual(a, a.subarray(0, 16))).toBe(false);
  });
});

describe('billing periods', () => {
  it('are UTC calendar months', () => {
    expect(billingPeriodAt(Date.UTC(2025, 0, 31, 23, 59, 59, 999))).toEqual({ start: Date.UTC(2025, 0, 1), end: Date.UTC(2025, 1, 1) });
    expect(billingPeriodAt(Date.UTC(2025, 1, 1))).toEqual({ start: Date.UTC(2025, 1, 1), end: Date.UTC(2025, 2, 1) });
    expect(billingPeriodAt(Date.UTC(2024, 11, 15))).toEqual({ start: Date.UTC(2024, 11, 1), end: Date.UTC(2025, 0, 1) });
  });
});

describe('fallback prompt rendering (the format docs/api.md documents)', () => {
  it('writes one block per message and leaves the assistant block open', () => {
    const text = renderFallback(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi', name: 'ann' },
        { role: 'assistant', content: 'Hello.' },
        { role: 'user', content: 'Tell a story' },
      ],
      undefined,
      true,
    );
    expect(text).toBe('### System:\nBe brief.\n\n### User (ann):\nHi\n\n### Assistant:\nHello.\n\n### User:\nTell a story\n\n### Assistant:\n');
    expect(FALLBACK_STOP).toEqual(['\n### ']);
  });
});
