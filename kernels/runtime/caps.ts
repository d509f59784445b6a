/**
 * What the engine may rely on from a device, read once after it is created.
 * Kernels choose their variants from this, never from the adapter name.
 */
import { LLVMPIPE_LOOP_BUDGET } from './loop-budget.ts';

export interface GpuCaps {
  /** `shader-f16` is enabled on the device. */
  f16: boolean;
  /** `subgroups` is enabled on the device. */
  subgroups: boolean;
  subgroupMinSize: number;
  subgroupMaxSize: number;
  /** WGSL's dot4I8Packed is offered (the `packed_4x8_integer_dot_product` language feature). */
  packedDot: boolean;
  /** `timestamp-query` is enabled on the device. */
  timestamps: boolean;
  maxStorageBuffersPerStage: number;
  maxInvocationsPerWorkgroup: number;
  maxWorkgroupSizeX: number;
  maxWorkgroupStorage: number;
  maxStorageBinding: number;
  maxBufferSize: number;
  maxWorkgroupsPerDimension: number;
  minUniformOffsetAlignment: number;
  minStorageOffsetAlignment: number;
  /** Largest uniform buffer binding (maxUniformBufferBindingSize). */
  maxUniformBinding: number;
  /** A CPU rasteriser (SwiftShader, llvmpipe): barriers and dispatches are expensive there. */
  software: boolean;
  /**
   * On a CPU rasteriser that says so, the invocations one SIMD instruction runs (llvmpipe reports its
   * vector width, "llvmpipe (LLVM 15.0.6, 512 bits)": 16 lanes); 0 where unknown and on GPUs.
   */
  cpuLanes: number;
  /**
   * A CPU rasteriser whose storage atomics are sequentially consistent read-modify-writes, so an invocation
   * that sees another's atomic add also sees that invocation's earlier stores: llvmpipe (Mesa's gallivm
   * emits every SSBO atomic as a seq_cst LLVM atomicrmw). WGSL's atomics are relaxed and other adapters
   * (SwiftShader: memory_order_relaxed) promise no such order. Product tails (matvec-tail.ts) need it.
   */
  orderedAtomics: boolean;
  /**
   * Loop iterations one invocation may run, all its loops counted together (kernels/runtime/loop-budget.ts):
   * LLVMPIPE_LOOP_BUDGET on llvmpipe, which ends every loop of an invocation, without an error, once this
   * many iterations have run; Infinity where nothing stops a loop. Kernels whose loops grow with their
   * input check their worst case against it (checkLoopBudget).
   */
  loopBudget: number;
  /**
   * Packed weight matrices live in `rgba32uint` textures rather than storage buffers (runtime/weights.ts):
   * llvmpipe, whose texel fetches are branchless gathers and its storage loads a branch per lane.
   */
  weightTextures: boolean;
  maxTextureDimension2D: number;
}

/**
 * Lanes of a CPU rasteriser from its adapter strings ("…-512-bits-", "512 bits"), 0 if it names none;
 * at most 64 (kernels size workgroups from it, and compatibility mode allows 128 invocations).
 */
export function cpuLanesOf(adapterInfo: GPUAdapterInfo | undefined): number {
  const text = adapterInfo ? `${adapterInfo.device} ${adapterInfo.description}` : '';
  const bits = /(\d+)[- ]bits/.exec(text);
  return bits ? Math.min(64, Math.floor(Number(bits[1]) / 32)) : 0;
}

/** Whether the adapter strings name llvmpipe ("llvmpipe (LLVM 15.0.6, 512 bits)"). */
export function isLlvmpipe(adapterInfo: GPUAdapterInfo | undefined): boolean {
  return adapterInfo ? /llvmpipe/i.test(`${adapterInfo.device} ${adapterInfo.description}`) : false;
}

/** `wgslFeatures`: the WGSL language features of the GPU object the device came from (none where unknown). */
export function readCaps(device: GPUDevice, adapterInfo: GPUAdapterInfo | undefined, software: boolean, wgslFeatures: ReadonlySet<string> = new Set()): GpuCaps {
  const l = device.limits;
  const info = adapterInfo as (GPUAdapterInfo & { subgroupMinSize?: number; subgroupMaxSize?: number }) | undefined;
  return {
    f16: device.features.has('shader-f16'),
    subgroups: device.features.has('subgroups'),
    subgroupMinSize: info?.subgroupMinSize ?? 0,
    subgroupMaxSize: info?.subgroupMaxSize ?? 0,
    packedDot: wgslFeatures.has('packed_4x8_integer_dot_product'),
    timestamps: device.features.has('timestamp-query'),
    maxStorageBuffersPerStage: l.maxStorageBuffersPerShaderStage,
    maxInvocationsPerWorkgroup: l.maxComputeInvocationsPerWorkgroup,
    maxWorkgroupSizeX: l.maxComputeWorkgroupSizeX,
    maxWorkgroupStorage: l.maxComputeWorkgroupStorageSize,
    maxStorageBinding: l.maxStorageBufferBindingSize,
    maxBufferSize: l.maxBufferSize,
    maxWorkgroupsPerDimension: l.maxComputeWorkgroupsPerDimension,
    minUniformOffsetAlignment: l.minUniformBufferOffsetAlignment,
    minStorageOffsetAlignment: l.minStorageBufferOffsetAlignment,
    maxUniformBinding: l.maxUniformBufferBindingSize,
    software,
    cpuLanes: software ? cpuLanesOf(adapterInfo) : 0,
    orderedAtomics: software && isLlvmpipe(adapterInfo),
    loopBudget: software && isLlvmpipe(adapterInfo) ? LLVMPIPE_LOOP_BUDGET : Infinity,
    weightTextures: software && isLlvmpipe(adapterInfo),
    maxTextureDimension2D: l.maxTextureDimension2D,
  };
}

/** The limits of WebGPU compatibility mode: kernels must work inside these everywhere. */
export const COMPAT_CAPS: GpuCaps = {
  f16: false,
  subgroups: false,
  subgroupMinSize: 0,
  subgroupMaxSize: 0,
  packedDot: false,
  timestamps: false,
  maxStorageBuffersPerStage: 8,
  maxInvocationsPerWorkgroup: 128,
  maxWorkgroupSizeX: 128,
  maxWorkgroupStorage: 16384,
  maxStorageBinding: 128 * 1024 * 1024,
  maxBufferSize: 256 * 1024 * 1024,
  maxWorkgroupsPerDimension: 65535,
  minUniformOffsetAlignment: 256,
  minStorageOffsetAlignment: 256,
  maxUniformBinding: 16384,
  software: true,
  cpuLanes: 0,
  orderedAtomics: false,
  // Kernels must fit llvmpipe's budget to work everywhere.
  loopBudget: LLVMPIPE_LOOP_BUDGET,
  weightTextures: false,
  maxTextureDimension2D: 8192,
};
