/**
 * The xgrammar runtime (@mlc-ai/web-xgrammar: C++ compiled to wasm, embedded in one UMD file), loaded once
 * and shared by every model. Platform-free: where the UMD is loaded from is a loader's business.
 *
 * - Bundlers (esbuild for browsers, or a CommonJS bundle for Node) turn the UMD into a module; the default
 *   loader imports it. The wasm is inlined as base64, so nothing else needs to be served.
 * - Unbundled Node (tsx, vitest) cannot import it as ESM (it needs `require` and `__filename`);
 *   `xgrammar-node.ts` installs a loader that evaluates the file with those supplied.
 *
 * xgrammar reports bad input by calling abort(): the message goes to stderr and the JS exception only says
 * "Aborted()". Worse, each abort leaks wasm stack, and after some tens of them the instance dies (the
 * process may exit). So callers validate input before it gets here (json-schema.ts, ebnf-check.ts), every
 * call runs through `run` to turn an abort into an error carrying xgrammar's own message, and a runtime
 * that has aborted is replaced by a fresh instance for new work where the loader can make one (Node).
 */
import type xgrammarDefault from '@mlc-ai/web-xgrammar';
import { GrammarEngineError } from './errors.ts';

export type XGrammarApi = typeof xgrammarDefault;
/** Returns the xgrammar API; called again after an abort, it should return a fresh instance if it can. */
export type XGrammarLoader = () => Promise<XGrammarApi>;

/** What the loaded module's internals look like where the public API would allocate per call. */
export interface MatcherHandle {
  GetNextTokenBitmask(vocabSize: number): { get(i: number): number; size(): number; delete(): void };
}

let loader: XGrammarLoader = importBundledXGrammar;
let current: Promise<XGrammarRuntime> | undefined;

/** Choose where xgrammar comes from (Node without a bundler: see xgrammar-node.ts). Resets the runtime. */
export function setXGrammarLoader(next: XGrammarLoader): void {
  if (next === loader) return;
  loader = next;
  current = undefined;
}

/** The shared runtime, loaded on first use; a fresh one replaces a runtime that has aborted. */
export async function xgrammarRuntime(): Promise<XGrammarRuntime> {
  if (current) {
    const rt = await current.catch(() => undefined);
    if (rt && !rt.tainted) return rt;
    if (rt && rt.singleton) return rt;
  }
  const previous = current ? await current.catch(() => undefined) : undefined;
  const loading = XGrammarRuntime.load(loader, previous);
  current = loading;
  loading.catch(() => {
    if (current === loading) current = undefined;
  });
  return loading;
}

/**
 * The UMD as a bundler made it a module. Depending on the bundle it hands its API to the module
 * namespace (`default`), to `globalThis.xgrammar` (browsers and ES-module bundles: the UMD's global
 * branch), or, in a CommonJS bundle, to the bundle's own `exports`; we take it from wherever it went.
 */
async function importBundledXGrammar(): Promise<XGrammarApi> {
  let ns: { default?: XGrammarApi } & Partial<XGrammarApi>;
  try {
    ns = (await import('@mlc-ai/web-xgrammar')) as unknown as typeof ns;
  } catch (e) {
    throw new GrammarEngineError(
      `@mlc-ai/web-xgrammar failed to load (${(e as Error).message}). In Node without a bundler, import ` +
        'engine/grammar/xgrammar-node.ts once first; an ES-module bundle for Node needs `require` and `__filename` defined (esbuild banner)',
    );
  }
  // In a CommonJS bundle the UMD sees the bundle's `exports` and writes its API there.
  const commonJs = typeof exports !== 'undefined' ? (exports as unknown) : undefined;
  const candidates = [ns.default, ns, (globalThis as { xgrammar?: unknown }).xgrammar, commonJs] as Array<Partial<XGrammarApi> | undefined>;
  const api = candidates.find((c) => c?.GrammarCompiler !== undefined);
  if (!api) throw new GrammarEngineError('@mlc-ai/web-xgrammar loaded but its API (GrammarCompiler) is nowhere to be found');
  return api as XGrammarApi;
}

/** Lines xgrammar printed while a call ran (captured), or null outside calls (printed as usual). */
let sink: string[] | null = null;
const originalConsoleError = console.error;

/**
 * xgrammar binds `console.error` when its wasm instance starts; binding this forwarder instead lets `run`
 * capture the messages, and everything else still reaches whatever console.error is at the time.
 */
function forwardConsoleError(...args: unknown[]): void {
  if (sink) {
    sink.push(args.map(String).join(' '));
    return;
  }
  const target = console.error === forwardConsoleError ? originalConsoleError : console.error;
  target.apply(console, args);
}

/** One loaded xgrammar instance. Per-instance caches (vocabularies, compiled grammars) hang off it. */
export class XGrammarRuntime {
  /** Aborted at least once: its wasm stack has leaked; new work goes to a fresh instance if possible. */
  tainted = false;
  aborts = 0;
  /** The loader returned the instance it had already returned (bundled UMD): no fresh one to be had. */
  singleton = false;
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly api: XGrammarApi,
    /** Milliseconds to load the module and start its wasm instance. */
    readonly loadMs: number,
  ) {}

  static async load(load: XGrammarLoader, previous?: XGrammarRuntime): Promise<XGrammarRuntime> {
    const t0 = performance.now();
    const api = await load();
    const reused = previous !== undefined && previous.api === api;
    if (!reused) {
      // Start the wasm instance now, with the forwarder in place for it to bind.
      console.error = forwardConsoleError;
      try {
        const info = await api.TokenizerInfo.createTokenizerInfo([]);
        info.dispose();
      } finally {
        if (console.error === forwardConsoleError) console.error = originalConsoleError;
      }
    }
    const rt = new XGrammarRuntime(api, performance.now() - t0);
    if (reused) {
      rt.singleton = true;
      rt.tainted = true;
      rt.aborts = previous.aborts;
    }
    return rt;
  }

  /**
   * Run xgrammar work, one call at a time (so captured messages belong to it). An abort becomes
   * `onAbort(message)`'s error, the message being what xgrammar printed; warnings go to `warnings`.
   */
  run<T>(fn: (api: XGrammarApi) => T | Promise<T>, onAbort: (message: string) => Error, warnings?: string[]): Promise<T> {
    const task = this.queue.then(async () => {
      const lines: string[] = [];
      sink = lines;
      try {
        return await fn(this.api);
      } catch (e) {
        throw this.translate(e, lines, onAbort);
      } finally {
        sink = null;
        warnings?.push(...lines.filter((l) => l.startsWith('[WARNING]')).map(stripLocation));
      }
    });
    this.queue = task.catch(() => undefined);
    return task;
  }

  /** The synchronous counterpart of `run` for per-token matcher calls. */
  runSync<T>(fn: () => T, onAbort: (message: string) => Error): T {
    const lines: string[] = [];
    const outer = sink;
    sink = lines;
    try {
      return fn();
    } catch (e) {
      throw this.translate(e, lines, onAbort);
    } finally {
      sink = outer;
    }
  }

  private translate(e: unknown, lines: string[], onAbort: (message: string) => Error): unknown {
    const text = e instanceof Error ? e.message : String(e);
    if (!/Aborted\(/.test(text)) return e;
    this.aborts++;
    this.tainted = true;
    const fatal = lines.filter((l) => l.startsWith('[FATAL]')).map(stripLocation);
    return onAbort(fatal.length > 0 ? fatal.join('; ') : 'xgrammar aborted without saying why');
  }
}

/** "[FATAL] /path/x.cc:12: Check failed: (a) is false: why" → "why". */
function stripLocation(line: string): string {
  const m = /^\[(?:FATAL|WARNING)\]\s+\S+:\d+:\s*(.*)$/s.exec(line.trim());
  const msg = m ? m[1] : line.trim();
  const check = /^Check failed: .*? is false: (.*)$/s.exec(msg);
  return (check ? check[1] : msg).trim();
}
