/**
 * The project side of the GPU-host pack (bench/gpu/pack.sh): esbuild bundles of the bench, the parity
 * check (check.ts), the kernel lab (lab.ts), the model synthesizer and the grammar worker, plus the few packages that cannot be bundled (native code, or files
 * found on disk at run time), copied from this checkout's node_modules into `<out>/node_modules`:
 *
 *   node --import ./bin/register.mjs bench/gpu/bundle.ts --out /tmp/svc-gpu/app [--no-cuda]
 *
 * - `webgpu`: index.js and dist/linux-x64/dawn.node only.
 * - `@mlc-ai/web-xgrammar`: engine/grammar/xgrammar-node.ts reads the UMD file from disk.
 * - `node-llama-cpp` with everything it depends on (not its optional peer typescript), and of its optional prebuilt binaries only
 *   linux-x64 (CPU), linux-x64-vulkan and, unless --no-cuda, linux-x64-cuda(+ext) (about 540 MB).
 */
import { build, type Plugin } from 'esbuild';
import { Command } from 'commander';
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { rawPlugin } from '../../build/esbuild-raw.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const NODE_MODULES = join(ROOT, 'node_modules');

/** Packages the bundles import at run time instead of containing them. */
export const EXTERNALS = ['webgpu', 'node-llama-cpp', '@mlc-ai/web-xgrammar'];

/** Which of node-llama-cpp's optional prebuilt packages travel. */
export function llamaPrebuilts(cuda: boolean): string[] {
  return ['@node-llama-cpp/linux-x64', '@node-llama-cpp/linux-x64-vulkan', ...(cuda ? ['@node-llama-cpp/linux-x64-cuda', '@node-llama-cpp/linux-x64-cuda-ext'] : [])];
}

/** Where Node would find package `name` required from package directory `from` (nested node_modules first). */
function resolvePackage(name: string, from: string): string | undefined {
  for (let dir = from; dir.startsWith(NODE_MODULES) || dir === ROOT; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (existsSync(join(candidate, 'package.json'))) return candidate;
    if (dir === ROOT) break;
  }
  return undefined;
}

/**
 * The package directories `roots` need at run time: dependencies, peer dependencies that are installed,
 * and the optional dependencies named in `optional` (others, such as other platforms' binaries, are left out).
 */
export function packageClosure(roots: readonly string[], optional: ReadonlySet<string>): string[] {
  const seen = new Set<string>();
  const visit = (dir: string) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined> & { peerDependenciesMeta?: Record<string, { optional?: boolean }> };
    const requiredPeers = Object.keys(pkg.peerDependencies ?? {}).filter((n) => !pkg.peerDependenciesMeta?.[n]?.optional);
    const names = [...Object.keys(pkg.dependencies ?? {}), ...requiredPeers, ...Object.keys(pkg.optionalDependencies ?? {}).filter((n) => optional.has(n))];
    for (const name of names) {
      const found = resolvePackage(name, dir);
      if (found) visit(found);
      else if (pkg.dependencies?.[name] !== undefined) throw new Error(`${relative(ROOT, dir)} needs ${name}, which is not installed`);
    }
  };
  for (const r of roots) {
    const dir = resolvePackage(r, ROOT);
    if (!dir) throw new Error(`${r} is not installed in ${NODE_MODULES}`);
    visit(dir);
  }
  return [...seen].sort();
}

/** Copies package directories to the same place under `<out>/node_modules` (nested node_modules copied only when in the list). */
function copyPackages(dirs: readonly string[], out: string, skip: (rel: string) => boolean): number {
  let bytes = 0;
  for (const dir of dirs) {
    const target = join(out, relative(ROOT, dir));
    cpSync(dir, target, {
      recursive: true,
      dereference: true,
      filter: (src) => {
        const rel = relative(dir, src);
        if (rel.split('/').includes('node_modules') || skip(relative(ROOT, src))) return false;
        if (statSync(src).isFile()) bytes += statSync(src).size;
        return true;
      },
    });
  }
  return bytes;
}

/** esbuild plugin: the bundled grammar-worker spawner instead of the one that runs worker-node.ts through tsx. */
const bundledWorkerPlugin: Plugin = {
  name: 'bundled-grammar-worker',
  setup(b) {
    b.onLoad({ filter: /engine[\\/]grammar[\\/]isolated[\\/]spawn-node\.ts$/ }, () => ({
      contents: readFileSync(join(ROOT, 'bench/gpu/spawn-node-bundled.ts'), 'utf8').replaceAll('../../engine/grammar/isolated/', './'),
      loader: 'ts',
      resolveDir: join(ROOT, 'engine/grammar/isolated'),
    }));
  },
};

/** An ES-module bundle still meets CommonJS code that calls require() for Node built-ins. */
const BANNER = "import { createRequire as __svcCreateRequire } from 'node:module'; const require = __svcCreateRequire(import.meta.url);";

export async function bundle(out: string, opts: { cuda: boolean }): Promise<{ files: string[]; packagesBytes: number }> {
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const entries = { bench: 'bench/run.ts', check: 'bench/gpu/check.ts', lab: 'bench/gpu/lab.ts', synth: 'bench/synth/cli.ts', 'grammar-worker': 'engine/grammar/isolated/worker-node.ts' };
  await build({
    absWorkingDir: ROOT,
    entryPoints: Object.fromEntries(Object.entries(entries).map(([k, v]) => [k, join(ROOT, v)])),
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: EXTERNALS,
    plugins: [rawPlugin, bundledWorkerPlugin],
    banner: { js: BANNER },
    logLevel: 'warning',
  });
  const skipLlamaSources = (rel: string) => /^node_modules\/node-llama-cpp\/llama\/(gitRelease\.bundle|llama\.cpp)(\/|$)/.test(rel);
  let packagesBytes = copyPackages(packageClosure(['node-llama-cpp', '@mlc-ai/web-xgrammar'], new Set(llamaPrebuilts(opts.cuda))), out, skipLlamaSources);
  // webgpu: only what loads dawn.node on linux-x64.
  const webgpu = join(NODE_MODULES, 'webgpu');
  const webgpuOut = join(out, 'node_modules/webgpu');
  mkdirSync(join(webgpuOut, 'dist/linux-x64'), { recursive: true });
  for (const f of ['package.json', 'index.js', 'LICENSE.md', 'dist/linux-x64/dawn.node']) {
    cpSync(join(webgpu, f), join(webgpuOut, f));
    packagesBytes += statSync(join(webgpu, f)).size;
  }
  writeFileSync(join(out, 'package.json'), JSON.stringify({ name: 'svc-gpu-bench', private: true, type: 'module' }, null, 2) + '\n');
  return { files: Object.keys(entries).map((k) => join(out, `${k}.mjs`)), packagesBytes };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const o = new Command('bundle')
    .requiredOption('--out <dir>', 'folder to write (emptied first)')
    .option('--no-cuda', "leave out node-llama-cpp's CUDA prebuilt binaries (about 540 MB)")
    .parse()
    .opts<{ out: string; cuda: boolean }>();
  const { files, packagesBytes } = await bundle(resolve(o.out), { cuda: o.cuda });
  for (const f of files) process.stdout.write(`${f}: ${(statSync(f).size / 2 ** 20).toFixed(1)} MiB\n`);
  process.stdout.write(`${join(resolve(o.out), 'node_modules')}: ${(packagesBytes / 2 ** 20).toFixed(0)} MiB of packages\n`);
}
