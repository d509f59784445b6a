import { readCaps, type GpuCaps } from '../../kernels/runtime/caps.ts';
import type { KernelSpec } from '../../kernels/runtime/context.ts';

/** What a KernelWarmer did: how many kernels it compiled, in how long, or why it could not. */
export type WarmReport = { kernels: number; ms: number } | { failed: string };

/**
 * Compiles kernels somewhere other than the calling thread, into a cache the device's own compile of
 * them then hits (llvmpipe: a child process filling Mesa's on-disk shader cache; platform/kernel-warmer.ts).
 * Best effort: it never rejects, and a failed warm leaves the compile to the device, where it was.
 */
export type KernelWarmer = (specs: readonly KernelSpec[], caps: GpuCaps) => Promise<WarmReport>;

/** Which adapter to use. `auto` tries a real GPU first, then the software adapters. */
export type AdapterChoice = 'auto' | 'gpu' | 'swiftshader' | 'llvmpipe' | 'browser';
export const ADAPTER_CHOICES: readonly AdapterChoice[] = ['auto', 'gpu', 'swiftshader', 'llvmpipe', 'browser'];

/** One way of getting an adapter on this platform, tried in order. */
export interface AdapterCandidate {
  name: Exclude<AdapterChoice, 'auto'>;
  /** Why `auto` tries this candidate where it does in the order (`svc doctor` prints it for the chosen one). */
  why?: string;
  /** Returns an adapter, or a sentence saying why there is none. */
  open(): Promise<{ adapter: GPUAdapter; software: boolean; featureLevel: 'core' | 'compatibility'; blockingSubmit?: boolean; wgslFeatures?: ReadonlySet<string> } | string>;
}

export interface SelectedDevice {
  device: GPUDevice;
  adapterInfo: GPUAdapterInfo;
  /** What kernels may rely on; a caller may lower limits (tests force small bindings). */
  caps: GpuCaps;
  choice: Exclude<AdapterChoice, 'auto'>;
  featureLevel: 'core' | 'compatibility';
  /**
   * `queue.submit` runs the work before returning, on the calling thread (Dawn's OpenGL ES backend on
   * llvmpipe), instead of handing it to the device.
   */
  blockingSubmit: boolean;
  /** Why this adapter: the candidate's place in the automatic order, or that the caller forced it. */
  reason: string;
  /** Adapters that were tried before this one, and why each was passed over. */
  skipped: { name: string; reason: string }[];
  /** Every feature the adapter offers (the device enables only those the engine uses). */
  adapterFeatures: string[];
  adapterLimits: Record<string, number>;
  /**
   * Where a software adapter's worker threads were placed (Node on Linux, llvmpipe:
   * platform/worker-pinning.ts); absent where the platform does not place them.
   */
  workerPinning?: { pinned: { tid: number; cpu: number }[]; reason: string };
  /**
   * Where the device compiles a kernel at its first dispatch on the calling thread (llvmpipe inside
   * submit: seconds for a large kernel, during which a server answers nobody), a way to compile kernels
   * off that thread first; work that makes new kernels while others are served (fine-tuning) calls it
   * before it submits them. Absent where compiling is cheap or cannot be moved.
   */
  warmKernels?: KernelWarmer;
}

/** Features the engine can use when present; none is required. */
const WANTED_FEATURES: GPUFeatureName[] = ['shader-f16', 'subgroups', 'timestamp-query'];

/** Limits worth raising from WebGPU's defaults to what the adapter offers. */
const WANTED_LIMITS = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxStorageBuffersPerShaderStage',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupStorageSize',
  'maxComputeWorkgroupsPerDimension',
  // CPU rasterisers' tiled products read quantized x through uniform windows (kernels/matmul.ts).
  'maxUniformBufferBindingSize',
] as const;

export class NoAdapterError extends Error {
  constructor(readonly skipped: { name: string; reason: string }[]) {
    super(
      'no WebGPU adapter could be opened: ' +
        skipped.map((s) => `${s.name}: ${s.reason}`).join('; ') +
        '. On a GPU-less Linux machine run scripts/install-system-deps.sh to install the software adapters.',
    );
    this.name = 'NoAdapterError';
  }
}

export function adapterLimits(adapter: GPUAdapter): Record<string, number> {
  const out: Record<string, number> = {};
  for (const key in adapter.limits) {
    const v = (adapter.limits as unknown as Record<string, unknown>)[key];
    if (typeof v === 'number') out[key] = v;
  }
  return out;
}

/**
 * Open the first candidate that yields an adapter and create a device with the adapter's own limits
 * and the optional features the engine can use.
 */
export async function selectDevice(candidates: AdapterCandidate[], choice: AdapterChoice): Promise<SelectedDevice> {
  const skipped: { name: string; reason: string }[] = [];
  const tried = choice === 'auto' ? candidates : candidates.filter((c) => c.name === choice);
  if (tried.length === 0) {
    throw new Error(`adapter "${choice}" is not available on this platform (choose one of: auto, ${candidates.map((c) => c.name).join(', ')})`);
  }
  for (const candidate of tried) {
    let opened;
    try {
      opened = await candidate.open();
    } catch (e) {
      opened = (e as Error).message;
    }
    if (typeof opened === 'string') {
      skipped.push({ name: candidate.name, reason: opened });
      continue;
    }
    const { adapter, software, featureLevel, blockingSubmit = false, wgslFeatures } = opened;
    const requiredFeatures = WANTED_FEATURES.filter((f) => adapter.features.has(f));
    const requiredLimits: Record<string, number> = {};
    const limits = adapterLimits(adapter);
    for (const key of WANTED_LIMITS) if (limits[key] !== undefined) requiredLimits[key] = limits[key];
    const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
    const adapterInfo = adapter.info;
    return {
      device,
      adapterInfo,
      caps: readCaps(device, adapterInfo, software, wgslFeatures),
      choice: candidate.name,
      featureLevel,
      blockingSubmit,
      reason: choice === 'auto' ? (candidate.why ?? `first adapter in the automatic order that opened`) : `forced (adapter choice "${choice}")`,
      skipped,
      adapterFeatures: [...adapter.features].map(String).sort(),
      adapterLimits: limits,
    };
  }
  throw new NoAdapterError(skipped);
}

export function describeAdapter(info: GPUAdapterInfo): string {
  const parts = [info.vendor, info.architecture, info.device, info.description].filter((s) => s && s.length > 0);
  return parts.join(' / ') || 'unknown adapter';
}
