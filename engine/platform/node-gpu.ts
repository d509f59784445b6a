/**
 * The adapters Node can reach through Dawn (`webgpu` npm package): a real GPU over Vulkan, SwiftShader's
 * software Vulkan from Debian's chromium-common, or Mesa llvmpipe through Dawn's OpenGL ES backend.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { create, globals } from 'webgpu';
import type { AdapterCandidate } from '../gpu/select.ts';

let globalsInstalled = false;
/** Dawn's GPUBufferUsage etc. are not globals in Node until installed. */
export function installWebGpuGlobals(): void {
  if (globalsInstalled) return;
  const g = globalThis as Record<string, unknown>;
  for (const [k, v] of Object.entries(globals as Record<string, unknown>)) if (g[k] === undefined) g[k] = v;
  globalsInstalled = true;
}

export const SWIFTSHADER_ICD = process.env.SVC_SWIFTSHADER_ICD ?? '/usr/lib/chromium/vk_swiftshader_icd.json';

/** Where NVIDIA's container toolkit mounts the driver's files; the Vulkan loader does not look there. */
export const NVIDIA_MOUNT_SHARE = '/usr/local/nvidia/share';

/**
 * Vulkan driver manifests where the Vulkan loader looks for them (its documented search order), plus the
 * folder NVIDIA containers mount theirs in, not counting SwiftShader's, which Debian keeps out of these
 * folders. With none, probing Vulkan only prints driver errors, so the real-GPU candidate is skipped with
 * the list of places it looked. `unseen`: the found manifests the loader would not find by itself.
 */
export function vulkanDriverManifests(env = process.env, nvidiaShare = NVIDIA_MOUNT_SHARE): { found: string[]; searched: string[]; unseen: string[] } {
  const explicit = (env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES ?? '').split(':').filter(Boolean);
  if (explicit.length > 0) return { found: explicit.filter((f) => existsSync(f)), searched: explicit, unseen: [] };
  const config = (env.XDG_CONFIG_DIRS ?? '/etc/xdg').split(':');
  const data = (env.XDG_DATA_DIRS ?? '/usr/local/share:/usr/share').split(':');
  const dirs = [...config, '/etc', ...data, join(env.HOME ?? homedir(), '.local/share'), nvidiaShare].map((d) => join(d, 'vulkan/icd.d'));
  const found: string[] = [];
  for (const dir of dirs) {
    try {
      for (const f of readdirSync(dir)) if (f.endsWith('.json')) found.push(join(dir, f));
    } catch {
      // A folder that does not exist holds no drivers.
    }
  }
  const unseen = found.filter((f) => f.startsWith(join(nvidiaShare, 'vulkan/icd.d') + '/'));
  return { found, searched: dirs, unseen };
}

/** Dawn keeps one instance per `create()`; keep them alive as long as the process so devices stay valid. */
const instances: GPU[] = [];

function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved: Record<string, string | undefined> = {};
  for (const [k, v] of Object.entries(vars)) {
    saved[k] = process.env[k];
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  return fn().finally(() => {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  });
}

function isSoftwareName(info: GPUAdapterInfo): boolean {
  const text = `${info.vendor} ${info.architecture} ${info.device} ${info.description}`.toLowerCase();
  return /swiftshader|llvmpipe|lavapipe|softpipe|software/.test(text);
}

/**
 * Dawn toggles for the CPU adapters. Robustness (clamping every storage access in the shader) and
 * zero-filling workgroup memory cost up to half of a kernel's time on SwiftShader and llvmpipe. Our
 * kernels compute every index from engine-controlled values (token ids, masks and positions are checked
 * before upload) and never read workgroup memory before writing it, so both are off by default there;
 * SVC_GPU_ROBUSTNESS=on keeps them. Real GPUs keep Dawn's defaults.
 */
export function softwareAdapterFlags(env = process.env): string[] {
  if ((env.SVC_GPU_ROBUSTNESS ?? '').toLowerCase() === 'on') return [];
  return ['enable-dawn-features=disable_robustness,disable_workgroup_init'];
}

/**
 * llvmpipe compiles kernels for 256-bit vectors (8 lanes) unless told otherwise, also on CPUs with
 * AVX-512. Where the CPU has it, 512 bits (16 lanes) prefilled SmolLM2-135M 1.3x as fast on the 2-core
 * development machine (decode within noise; every test passes at both widths). The variable is read
 * once, when the process first opens llvmpipe; a user's own LP_NATIVE_VECTOR_WIDTH is kept.
 */
export function llvmpipeVectorWidth(env = process.env, cpuinfo = readCpuinfo()): { LP_NATIVE_VECTOR_WIDTH?: string } {
  if (env.LP_NATIVE_VECTOR_WIDTH !== undefined) return {};
  return /^flags\s*:.*\bavx512f\b/m.test(cpuinfo) ? { LP_NATIVE_VECTOR_WIDTH: '512' } : {};
}

function readCpuinfo(): string {
  try {
    return readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    return '';
  }
}

/**
 * Why the software adapters are tried in this order. Measured with `npm run bench -- --limits` and the
 * end-to-end bench on the 2-core development machine (bench/results/README.md): llvmpipe streams about
 * 2.7x and computes about 9x what SwiftShader does, and decodes several times faster end to end, because
 * it runs each workgroup's invocations in SIMD lanes and spreads workgroups over all cores.
 */
const LLVMPIPE_WHY =
  'no real GPU: llvmpipe (Mesa, through Dawn\'s OpenGL ES backend) is the faster software adapter: measured 14.5 GB/s streaming read and 131 GFLOP/s against SwiftShader\'s 5.3 GB/s and 14 GFLOP/s on a 2-core machine (bench/results/README.md)';
const SWIFTSHADER_WHY = 'neither a real GPU nor llvmpipe could be opened: SwiftShader (Vulkan) is the slower software adapter, kept as the last resort';

/** The WGSL language features a Dawn instance offers (Dawn's GPU object has them as navigator.gpu does). */
function wgslFeaturesOf(gpu: GPU): ReadonlySet<string> {
  return new Set((gpu as GPU & { wgslLanguageFeatures?: Iterable<string> }).wgslLanguageFeatures ?? []);
}

/** Tried in this order by `auto`: a real GPU, then llvmpipe, then SwiftShader (see LLVMPIPE_WHY). */
export function nodeAdapterCandidates(): AdapterCandidate[] {
  installWebGpuGlobals();
  if (!process.env.XDG_RUNTIME_DIR) process.env.XDG_RUNTIME_DIR = '/tmp';
  return [
    {
      name: 'gpu',
      why: 'a real GPU is always tried first',
      async open() {
        // A user's own VK_ICD_FILENAMES / VK_DRIVER_FILES is respected.
        const manifests = vulkanDriverManifests();
        if (manifests.found.length === 0) return `no Vulkan driver is installed (no manifest in ${manifests.searched.join(', ')})`;
        // A manifest the loader would not find (NVIDIA's mount) is named to it, beside the ones it would.
        const env = manifests.unseen.length > 0 ? { VK_ICD_FILENAMES: manifests.found.join(':'), VK_DRIVER_FILES: undefined } : {};
        const { gpu, adapter } = await withEnv(env, async () => {
          const gpu = create(['backend=vulkan']);
          instances.push(gpu);
          return { gpu, adapter: await gpu.requestAdapter({ powerPreference: 'high-performance' }) };
        });
        if (!adapter) return 'no Vulkan driver for a real GPU was found (Dawn Vulkan backend returned no adapter)';
        const info = adapter.info as GPUAdapterInfo & { isFallbackAdapter?: boolean };
        if (info.isFallbackAdapter || isSoftwareName(info)) return `the only Vulkan device is a software one (${info.description || info.device})`;
        return { adapter, software: false, featureLevel: 'core', wgslFeatures: wgslFeaturesOf(gpu) };
      },
    },
    {
      name: 'llvmpipe',
      why: LLVMPIPE_WHY,
      async open() {
        return withEnv({ EGL_PLATFORM: process.env.EGL_PLATFORM ?? 'surfaceless', ...llvmpipeVectorWidth() }, async () => {
          const gpu = create(['backend=opengles', ...softwareAdapterFlags()]);
          instances.push(gpu);
          const adapter = await gpu.requestAdapter({ featureLevel: 'compatibility' });
          if (!adapter) return 'Dawn OpenGL ES backend found no EGL device (install libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri)';
          // Dawn's GL backend executes a command buffer inside submit(), so the caller's thread does the work.
          return { adapter, software: isSoftwareName(adapter.info), featureLevel: 'compatibility' as const, blockingSubmit: true, wgslFeatures: wgslFeaturesOf(gpu) };
        });
      },
    },
    {
      name: 'swiftshader',
      why: SWIFTSHADER_WHY,
      async open() {
        if (!existsSync(SWIFTSHADER_ICD)) return `SwiftShader ICD not found at ${SWIFTSHADER_ICD} (Debian package chromium-common provides it)`;
        return withEnv({ VK_ICD_FILENAMES: SWIFTSHADER_ICD, VK_DRIVER_FILES: undefined }, async () => {
          const gpu = create(['backend=vulkan', ...softwareAdapterFlags()]);
          instances.push(gpu);
          const adapter = await gpu.requestAdapter();
          if (!adapter) return 'Dawn found no adapter through the SwiftShader ICD (is libvulkan1 installed?)';
          return { adapter, software: true, featureLevel: 'core' as const, wgslFeatures: wgslFeaturesOf(gpu) };
        });
      },
    },
  ];
}
