/**
 * What a generator produces: a Case is one or more HTTP exchanges (or connection tricks) with the
 * statuses its author expects. Helpers here build the common requests with a key and a JSON body.
 */
import type { RawRequest, RawResponse, Target } from './raw-http.ts';

export type Category = 'schema' | 'tools' | 'sizes' | 'encodings' | 'auth' | 'connections' | 'valid';

export interface Keys {
  /** Enterprise, paid, limits high enough for the whole run: most requests use it. */
  main: string;
  professional: string;
  starter: string;
  solo: string;
  /** A sandbox (svc_test_) key on the main account. */
  sandbox: string;
  revoked: string;
}

export interface Outcome {
  /** The status code, what the server did instead, or what the client did (`client-left`, `client-error`). */
  status: RawResponse['status'] | 'client-left' | 'client-error';
  /** `error.code` of a JSON error body ('null' for an error without a code). */
  code: string | null;
  ms: number;
  /** Something the case noticed besides the status (e.g. a stream without [DONE]). */
  problem?: string;
}

export interface Case {
  category: Category;
  /** Generator name: category/what. */
  name: string;
  /** Exchanges this case makes (counted toward --requests). */
  exchanges: number;
  /** Statuses that are a correct answer; others are listed as unexpected (a generator or server bug). */
  expect: (number | string)[];
  /** Slow by design (slowloris, idle sockets): run beside the main pool so it does not hold a slot. */
  background?: boolean;
  /** A plain request: the runner sends it. */
  request?: RawRequest;
  /** Anything else (raw sockets, streams): the case runs itself. */
  run?: (t: Target) => Promise<Outcome[]>;
}

export interface GenContext {
  rng: Rng;
  keys: Keys;
}

export type Generator = (g: GenContext) => Case;

/** Deterministic PRNG (mulberry32) with the picks generators need. */
export class Rng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1));
  }
  /** An integer spread over orders of magnitude between lo and hi. */
  logInt(lo: number, hi: number): number {
    return Math.min(hi, Math.max(lo, Math.round(Math.exp(Math.log(lo) + this.next() * (Math.log(hi) - Math.log(lo))))));
  }
  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.next() * xs.length)];
  }
  bool(p = 0.5): boolean {
    return this.next() < p;
  }
  word(len = this.int(1, 8)): string {
    let s = '';
    for (let i = 0; i < len; i++) s += String.fromCharCode(97 + this.int(0, 25));
    return s;
  }
}

export const CHAT = '/v1/chat/completions';
export const INFER = '/v1/infer';

export function bearer(key: string): [string, string] {
  return ['Authorization', `Bearer ${key}`];
}

/** POST of a JSON body (an object, or text sent as is) with a key. */
export function post(path: string, body: unknown, key: string | undefined, extra: [string, string][] = []): RawRequest {
  const text = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const headers: [string, string][] = [['Content-Type', 'application/json'], ...extra];
  if (key !== undefined) headers.push(bearer(key));
  return { method: 'POST', path, headers, body: text as string | Buffer };
}

/** A small chat completion body; `over` replaces or adds fields. max_tokens stays small so nothing runs long. */
export function chatBody(over: Record<string, unknown> = {}): Record<string, unknown> {
  return { model: 'svc-chat', messages: [{ role: 'user', content: 'Tell me about the cat.' }], max_tokens: 4, ...over };
}

export function inferBody(specialist: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return { specialist, prompt: 'Tom had a red ball. It rolled into the pond.', max_tokens: 4, ...over };
}

/**
 * JSON text too deep for JSON.stringify (thousands of levels): build the body with `RAW` where it goes,
 * then splice the text in.
 */
export const RAW = '@@raw-json@@';

export function splice(body: unknown, raw: string): string {
  return JSON.stringify(body).replace(JSON.stringify(RAW), () => raw);
}

/** `{"type":"object","properties":{"a": … leaf …},"required":["a"]}` nested `depth` times, as text. */
export function nestedSchemaText(depth: number, leaf: string, key = 'a'): string {
  return `{"type":"object","properties":{"${key}":`.repeat(depth) + leaf + `},"required":["${key}"]}`.repeat(depth);
}

/** A case of one plain request. */
export function req(category: Category, name: string, request: RawRequest, expect: (number | string)[]): Case {
  return { category, name, exchanges: 1, expect, request };
}
