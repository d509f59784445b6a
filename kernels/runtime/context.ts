/**
 * What every kernel wrapper is built on: the device, what it can do, and a cache of compiled pipelines.
 *
 * Convention shared by all kernels (see kernels/README.md):
 *   - group(0): the kernel's buffers, bindings 0..n-1, declared as `read` or `write` (storage) or `uniform`
 *     (a uniform buffer, at most maxUniformBufferBindingSize: x windows of matmul-x-window.ts) in its spec,
 *     or `weights`, a packed weight matrix whose WGSL declaration (`w`, read through `w_ld(i)`) the
 *     context writes for the device (runtime/weights.ts);
 *   - group(1) binding(0): its `Params` uniform struct, bound with a dynamic offset into the step's ParamArena,
 *     so one writeBuffer per step carries every dispatch's parameters.
 */
import type { GpuCaps } from './caps.ts';
import { isTexture, texelsLayoutEntry, weightsLayoutEntry, weightsWgsl, type WeightStore } from './weights.ts';

/**
 * 'weights': a packed weight matrix, a storage buffer or a texture by the device (runtime/weights.ts).
 * 'texture': a read-only rgba32uint storage texture (quantized x on CPU rasterisers, matmul-x-texture.ts).
 */
export type BindingKind = 'read' | 'write' | 'uniform' | 'weights' | 'texture';

/** What a binding takes: a buffer (or a range of one), or for 'weights' the device's WeightStore. */
export type BindingResource = GPUBuffer | GPUBufferBinding | WeightStore;

export interface KernelSpec {
  /** Unique among kernels: the pipeline cache key is `label` plus a hash of code and constants. */
  label: string;
  /** Complete WGSL, usually several `.wgsl` files joined (see `wgsl()`). */
  code: string;
  /** Buffer bindings of group(0), in binding order. */
  bindings: readonly BindingKind[];
  entryPoint?: string;
  /** Values for the shader's `override` declarations (workgroup sizes, unrolls). */
  constants?: Record<string, number>;
}

export class CompiledKernel {
  constructor(
    readonly label: string,
    readonly pipeline: GPUComputePipeline,
    readonly bufferLayout: GPUBindGroupLayout,
    private readonly device: GPUDevice,
    readonly bindingCount: number,
  ) {}

  /** Bind group for group(0); create once per set of buffers and reuse it every step. */
  bind(buffers: readonly BindingResource[], label?: string): GPUBindGroup {
    return bindResources(this.device, this.bufferLayout, this.bindingCount, buffers, label ?? this.label);
  }
}

function bindResources(device: GPUDevice, layout: GPUBindGroupLayout, count: number, buffers: readonly BindingResource[], label: string): GPUBindGroup {
  if (buffers.length !== count) throw new Error(`kernel ${label} takes ${count} buffers, got ${buffers.length}`);
  return device.createBindGroup({
    label,
    layout,
    entries: buffers.map((b, binding) => ({ binding, resource: 'buffer' in b ? b : isTexture(b) ? b.createView() : { buffer: b } })),
  });
}

/** Size in bytes of one dispatch's parameter slot: WebGPU's largest required uniform offset alignment. */
export const PARAM_SLOT_BYTES = 256;

export class KernelContext {
  private readonly cache = new Map<string, CompiledKernel>();
  private readonly layouts = new Map<string, GPUBindGroupLayout>();
  readonly paramsLayout: GPUBindGroupLayout;
  /** The validation results of pipelines made since the last checkKernels(), each naming its kernel. */
  private unchecked: Promise<string | undefined>[] = [];
  /** The specs of pipelines made since the last takeNewKernels(), once trackNewKernels() was called. */
  private made: KernelSpec[] | undefined;

  constructor(
    readonly device: GPUDevice,
    readonly caps: GpuCaps,
  ) {
    this.paramsLayout = device.createBindGroupLayout({
      label: 'params',
      entries: [{ binding: 0, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'uniform', hasDynamicOffset: true, minBindingSize: 0 } }],
    });
  }

  kernel(spec: KernelSpec): CompiledKernel {
    const key = kernelKey(spec);
    const constants = spec.constants ?? {};
    const hit = this.cache.get(key);
    if (hit) return hit;
    if (spec.bindings.length > this.caps.maxStorageBuffersPerStage) {
      throw new Error(`kernel ${spec.label} needs ${spec.bindings.length} storage buffers; the device allows ${this.caps.maxStorageBuffersPerStage}`);
    }
    const weights = spec.bindings.flatMap((kind, binding) => (kind === 'weights' ? [binding] : []));
    if (weights.length > 1) throw new Error(`kernel ${spec.label}: one weights binding at most (its WGSL name is w)`);
    const device = this.device;
    const bufferLayout = this.layoutFor(spec.bindings);
    // Appended: WGSL's module-scope declarations may come in any order, but directives must come first.
    const code = weights.length > 0 ? `${spec.code}\n${weightsWgsl(this.caps, weights[0])}` : spec.code;
    // A pipeline that fails to build is only an error object until used, and a dispatch of it does
    // nothing: each creation gets its own error scope, read by checkKernels().
    device.pushErrorScope('validation');
    const module = device.createShaderModule({ label: spec.label, code });
    // Pipeline errors only say "invalid due to a previous error"; print the WGSL compiler's own words.
    void module.getCompilationInfo().then((info) => {
      for (const m of info.messages) {
        if (m.type === 'error') console.error(`WGSL error in kernel ${spec.label} at ${m.lineNum}:${m.linePos}: ${m.message}`);
      }
    });
    const pipeline = device.createComputePipeline({
      label: spec.label,
      layout: device.createPipelineLayout({ bindGroupLayouts: [bufferLayout, this.paramsLayout] }),
      compute: { module, entryPoint: spec.entryPoint ?? 'main', constants },
    });
    this.unchecked.push(device.popErrorScope().then((e) => (e ? `${spec.label}: ${e.message}` : undefined)));
    const compiled = new CompiledKernel(spec.label, pipeline, bufferLayout, device, spec.bindings.length);
    this.cache.set(key, compiled);
    this.made?.push(spec);
    return compiled;
  }

  /**
   * The specs of the pipelines made since the last call, in the order they were made: what a caller hands
   * a KernelWarmer before its first submit of them (a CPU rasteriser compiles a kernel at its first dispatch).
   */
  takeNewKernels(): KernelSpec[] {
    const made = this.made ?? [];
    if (this.made) this.made = [];
    return made;
  }

  /** From now on, remember the specs of the pipelines made, for takeNewKernels(). */
  trackNewKernels(): void {
    this.made ??= [];
  }

  /** Whether a pipeline labelled `label` has been made (some are made on first use: XAlignedPair's lazy ones). */
  hasKernel(label: string): boolean {
    for (const k of this.cache.values()) if (k.label === label) return true;
    return false;
  }

  /** The group(0) layout of bindings of these kinds; kernels with equal kinds share it. */
  private layoutFor(kinds: readonly BindingKind[]): GPUBindGroupLayout {
    const key = kinds.join(',');
    let layout = this.layouts.get(key);
    if (!layout) {
      layout = this.device.createBindGroupLayout({
        label: key,
        entries: kinds.map((kind, binding) =>
          kind === 'weights'
            ? weightsLayoutEntry(this.caps, binding)
            : kind === 'texture'
            ? texelsLayoutEntry(binding)
            : { binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: kind === 'read' ? ('read-only-storage' as const) : kind === 'uniform' ? ('uniform' as const) : ('storage' as const) } },
        ),
      });
      this.layouts.set(key, layout);
    }
    return layout;
  }

  /**
   * A group(0) bind group for any kernel whose bindings are `kinds`, made before (or without) compiling
   * one of them: WebGPU takes a bind group for every pipeline whose layout has the same entries.
   */
  bindGroup(kinds: readonly BindingKind[], resources: readonly BindingResource[], label: string): GPUBindGroup {
    return bindResources(this.device, this.layoutFor(kinds), kinds.length, resources, label);
  }

  /**
   * Rejects, naming each kernel and the compiler's words, if a pipeline made since the last call failed
   * to build; a model must not serve from kernels that silently do nothing.
   */
  async checkKernels(): Promise<void> {
    const pending = this.unchecked;
    this.unchecked = [];
    const failed = (await Promise.all(pending)).filter((e): e is string => e !== undefined);
    if (failed.length > 0) throw new Error(`${failed.length} kernel(s) failed to build on this device: ${failed.join('; ')}`);
  }

  /** A storage buffer; `data` (if any) is written at creation through a mapped range. */
  storage(label: string, byteSize: number, data?: ArrayBufferView, extraUsage = 0): GPUBuffer {
    const size = Math.max(16, alignUp(byteSize, 16));
    const buffer = this.device.createBuffer({
      label,
      size,
      usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC | extraUsage,
      mappedAtCreation: data !== undefined,
    });
    if (data) {
      new Uint8Array(buffer.getMappedRange()).set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
      buffer.unmap();
    }
    return buffer;
  }
}

/** What makes two specs the same pipeline: the cache key of KernelContext.kernel(). */
export function kernelKey(spec: KernelSpec): string {
  return `${spec.label}|${hashString(spec.code)}|${JSON.stringify(spec.constants ?? {})}|${spec.entryPoint ?? 'main'}`;
}

export function alignUp(n: number, a: number): number {
  return Math.ceil(n / a) * a;
}

/** Join WGSL sources (a kernel plus the helper files it uses) into one module. */
export function wgsl(...parts: string[]): string {
  return parts.join('\n');
}

function hashString(s: string): string {
  let h1 = 0x811c9dc5;
  let h2 = 0x1b873593;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 0x01000193);
    h2 = Math.imul(h2 ^ c, 0x5bd1e995);
  }
  return (h1 >>> 0).toString(16) + (h2 >>> 0).toString(16);
}
