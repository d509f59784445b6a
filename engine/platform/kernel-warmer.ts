/**
 * llvmpipe's kernel warmer: compiles kernels in a child process so that the server's thread does not.
 *
 * llvmpipe (Mesa, through Dawn's OpenGL ES backend) compiles a pipeline's machine code at its first
 * dispatch, inside queue.submit on the calling thread: measured on a 2-core Xeon, the three training
 * attention kernels of a 64-value head held the thread 1.4 s, those of a 256-value head 79 s on a Zen 5,
 * and meanwhile a server streams nothing, accepts nothing and answers no health check. Mesa keeps what it
 * compiles in its on-disk shader cache, shared by every process of the user, and a compile that hits it
 * takes milliseconds (the same three kernels: 2 ms). So the kernels are dispatched once in a child
 * process (kernels/runtime/dispatch-once.ts) while this process goes on; its own first dispatch then
 * hits the cache. A child, not a worker thread: an LLVM compile that crashes or runs out of memory takes
 * the child with it, not the service, and a child that runs too long is killed.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { kernelKey, type KernelSpec } from '../../kernels/runtime/context.ts';
import type { KernelWarmer } from '../gpu/select.ts';
import type { WarmRequest, WarmResult } from './kernel-warmer-child.ts';

const ENTRY = fileURLToPath(new URL('./kernel-warmer-child.ts', import.meta.url));
const REGISTER = new URL('../../bin/register.mjs', import.meta.url).href;

/** Longest a child may compile before it is stopped: one head-256 training kernel took 79-242 s on 2 cores. */
const DEFAULT_TIMEOUT_MS = 20 * 60_000;

/** Whether Mesa keeps compiled shaders on disk (its own variables turn the cache off); without it, warming is wasted work. */
export function mesaShaderCacheEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const on = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v.trim());
  return !on(env.MESA_SHADER_CACHE_DISABLE) && !on(env.MESA_GLSL_CACHE_DISABLE);
}

export interface LlvmpipeWarmerOptions {
  timeoutMs?: number;
  /** The child's entry (tests point it at one that misbehaves). */
  entry?: string;
}

/**
 * A KernelWarmer for llvmpipe. Kernels it warmed once are not sent again for the life of this process
 * (Mesa's cache keeps them); kernels the same call names twice are compiled once.
 */
export function llvmpipeKernelWarmer(opts: LlvmpipeWarmerOptions = {}): KernelWarmer {
  const warmed = new Set<string>();
  return async (specs, caps) => {
    const fresh = new Map<string, KernelSpec>();
    for (const s of specs) {
      const key = kernelKey(s);
      if (!warmed.has(key)) fresh.set(key, s);
    }
    if (fresh.size === 0) return { kernels: 0, ms: 0 };
    const started = performance.now();
    const failed = await compileInChild({ specs: [...fresh.values()], caps }, opts.timeoutMs ?? DEFAULT_TIMEOUT_MS, opts.entry ?? ENTRY);
    if (failed !== undefined) return { failed };
    for (const key of fresh.keys()) warmed.add(key);
    return { kernels: fresh.size, ms: performance.now() - started };
  };
}

/** Resolves when the child has compiled every kernel of `request`: undefined, or why it did not. */
function compileInChild(request: WarmRequest, timeoutMs: number, entry: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    let stderr = '';
    let settled = false;
    const done = (r: string | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(r);
    };
    const child = fork(entry, [], { execArgv: ['--import', REGISTER], stdio: ['ignore', 'ignore', 'pipe', 'ipc'], serialization: 'advanced' });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      done(`the kernel warmer ran past ${Math.round(timeoutMs / 1000)} s and was stopped`);
    }, timeoutMs);
    // The tail only: what a child that died said last.
    child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-2000)));
    child.on('message', (m: WarmResult) => {
      done('error' in m ? `the kernel warmer could not compile them: ${m.error}` : undefined);
      child.disconnect();
    });
    child.on('error', (e) => done(`the kernel warmer could not start: ${e.message}`));
    child.on('exit', (code, signal) => {
      const said = stderr.trim().split('\n').filter((l) => !/^Warning: /.test(l)).slice(-3).join(' / ');
      done(`the kernel warmer exited (${signal ?? `code ${code}`}) before it was done${said ? `: ${said}` : ''}`);
    });
    child.send(request);
  });
}
