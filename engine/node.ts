/** Node entry point: open a Dawn device, resolve a model path or URL, load the engine. */
// Unbundled Node needs xgrammar's UMD bundle loaded its own way before any grammar is compiled.
import './grammar/xgrammar-node.ts';
import { WebGpuEngine, type EngineOptions } from './engine.ts';
import { IsolatedGrammars, type GrammarIsolationOptions } from './grammar/isolated/isolated-grammars.ts';
import { spawnNodeGrammarWorker } from './grammar/isolated/spawn-node.ts';
import { resolveModel } from './loader/resolve-node.ts';
import type { ModelSource } from './loader/source.ts';
import { adapterChoiceFromEnv, openNodeDevice } from './platform/node.ts';

export interface NodeEngineOptions extends EngineOptions {
  /** Path to a GGUF file, an https:// URL (downloaded once into the cache), or a ModelSource. */
  model: string | ModelSource;
  /** auto | gpu | swiftshader | llvmpipe (default: SVC_ADAPTER or auto). */
  adapter?: string;
  /** Download progress when `model` is a URL not yet in the cache. */
  onDownloadProgress?: (receivedBytes: number, totalBytes: number | undefined) => void;
  /** Model download cache (default SVC_CACHE_DIR or ~/.cache/svc/models). */
  cacheDir?: string;
  /**
   * Grammar workers' budgets, or `in-process` to compile and match grammars on this thread (tests and
   * tools that trust their grammars). Default: workers with the default budgets, started on first use.
   */
  grammars?: GrammarIsolationOptions | 'in-process';
}

export async function loadEngine(opts: NodeEngineOptions): Promise<WebGpuEngine> {
  const choice = opts.adapter !== undefined ? adapterChoiceFromEnv(opts.adapter, 'adapter') : adapterChoiceFromEnv();
  const source = typeof opts.model === 'string' ? await resolveModel(opts.model, { onProgress: opts.onDownloadProgress, cacheDir: opts.cacheDir }) : opts.model;
  const selected = await openNodeDevice(choice);
  try {
    const engine = await WebGpuEngine.load(selected, source, opts);
    if (opts.grammars !== 'in-process') engine.grammars = new IsolatedGrammars(engine.tokenizer, spawnNodeGrammarWorker, opts.grammars ?? grammarOptionsFromEnv());
    return engine;
  } catch (e) {
    selected.device.destroy();
    await source.close?.();
    throw e;
  }
}

/**
 * Grammar budgets from the environment: SVC_GRAMMAR_COMPILE_MS (time to compile one new grammar),
 * SVC_GRAMMAR_MEMORY_MB (wasm memory of a grammar worker). Unset: the defaults.
 */
export function grammarOptionsFromEnv(env: Record<string, string | undefined> = process.env): GrammarIsolationOptions {
  const positive = (name: string): number | undefined => {
    const v = env[name];
    if (v === undefined || v === '') return undefined;
    if (!/^\d+$/.test(v) || Number(v) <= 0) throw new Error(`${name} must be a positive whole number (got ${JSON.stringify(v)})`);
    return Number(v);
  };
  return { compileTimeoutMs: positive('SVC_GRAMMAR_COMPILE_MS'), memoryMiB: positive('SVC_GRAMMAR_MEMORY_MB') };
}
