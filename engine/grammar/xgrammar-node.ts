/**
 * xgrammar in unbundled Node (tsx, vitest, `node --import`). The package is a UMD file in a package marked
 * `"type": "module"`, so Node loads it as ESM, where the `require` and `__filename` its Node branch needs
 * do not exist. Instead of planting those as globals for the whole process, we evaluate the file as the
 * CommonJS module it is, handing it its own `require` and `__filename`. Each call makes a fresh,
 * independent wasm instance, which is what the runtime needs to recover after xgrammar aborts.
 *
 * Importing this file installs the loader; bundles (browser or Node) do not need it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { GrammarEngineError } from './errors.ts';
import { setXGrammarLoader, type XGrammarApi } from './xgrammar.ts';

let source: { path: string; text: string } | undefined;

/**
 * The emscripten glue's Node branch does `await import('module')`. Code made with `new Function` has no
 * module context of its own, and where the host gives it none (vitest runs modules through `vm`) that
 * import fails; so the file gets the module handed in instead. Where the text differs (another release
 * of the package), the file runs as it is, which works in plain Node.
 */
const DYNAMIC_IMPORT = "await import('module')";

export async function loadXGrammarInNode(): Promise<XGrammarApi> {
  if (!source) {
    const path = createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar');
    source = { path, text: readFileSync(path, 'utf8').replace(DYNAMIC_IMPORT, 'await __svcNodeModule()') };
  }
  const module = { exports: {} as Record<string, unknown> };
  // eslint-disable-next-line @typescript-eslint/no-implied-eval -- evaluating a CommonJS file is the point
  const factory = new Function('exports', 'module', 'require', '__filename', '__dirname', '__svcNodeModule', source.text) as (
    exports: object,
    module: object,
    require: NodeRequire,
    filename: string,
    dirname: string,
    nodeModule: () => Promise<unknown>,
  ) => void;
  factory.call(undefined, module.exports, module, createRequire(source.path), source.path, dirname(source.path), () => import('node:module'));
  const api = (module.exports.default ?? module.exports) as XGrammarApi;
  if (!api?.GrammarCompiler) throw new GrammarEngineError(`${source.path} did not define the xgrammar API (GrammarCompiler missing)`);
  return api;
}

/** Make grammars work in this Node process (idempotent; importing this module already did it). */
export function installNodeXGrammar(): void {
  setXGrammarLoader(loadXGrammarInNode);
}

installNodeXGrammar();
