/**
 * Where a packed weight matrix lives on the device: a storage buffer, or, on llvmpipe, an `rgba32uint`
 * texture read as a read-only storage texture (GpuCaps.weightTextures). llvmpipe runs a storage-buffer
 * load as a loop over its SIMD lanes with a branch per lane and component; a texture read is branchless.
 * Of the two texture reads, a sampled texel fetch goes through Mesa's generic sampling function, which
 * works out mip-level sizes, offsets and strides lane by lane before its loads (about half of its
 * instructions, 15% of a 64-token prefill's time in a perf profile); an image load (storage texture)
 * has one level and skips that: a streaming read 15-18 -> 24-25 GB/s, a decode step 0.75x the time and
 * a 64-token prefill 0.89x (interleaved in one process, 2026-11-27). Every kernel that reads packed
 * weights declares the binding kind 'weights' and reads vec4 i of the matrix as `w_ld(i)`;
 * KernelContext writes the declaration for the device (weightsWgsl), so the same WGSL serves both stores.
 */
import type { GpuCaps } from './caps.ts';

export type WeightStore = GPUBuffer | GPUTexture;

/** Texels (16 bytes each) a texture row: 64 KiB, so a row index is the vec4 index shifted right by 12. */
export const WEIGHT_TEXTURE_WIDTH = 4096;
const ROW_BYTES = WEIGHT_TEXTURE_WIDTH * 16;

export function isTexture(store: WeightStore): store is GPUTexture {
  return 'createView' in store;
}

/** The WGSL that declares binding `binding` as the weights `w` and reads vec4 i of them as `w_ld(i)`. */
export function weightsWgsl(caps: GpuCaps, binding: number): string {
  if (!caps.weightTextures) {
    return `@group(0) @binding(${binding}) var<storage, read> w: array<vec4u>;\nfn w_ld(i: u32) -> vec4u { return w[i]; }\n`;
  }
  return texelsWgsl('w', binding, 'w_ld');
}

/**
 * WGSL declaring binding `binding` as a read-only rgba32uint storage texture `name` of WEIGHT_TEXTURE_WIDTH
 * texels a row, and `loader(i)`, its vec4 i (texel i % width of row i / width): the weights' texture,
 * quantized x copied into one (kernels/matmul-x-texture.ts), a long step's KV mirror (engine/kv/kv-mirror.ts).
 */
export function texelsWgsl(name: string, binding: number, loader: string): string {
  const shift = Math.log2(WEIGHT_TEXTURE_WIDTH);
  return `@group(0) @binding(${binding}) var ${name}: texture_storage_2d<rgba32uint, read>;\nfn ${loader}(i: u32) -> vec4u { return textureLoad(${name}, vec2u(i & ${WEIGHT_TEXTURE_WIDTH - 1}u, i >> ${shift}u)); }\n`;
}

/**
 * A texture as texelsWgsl reads it: whole rows of WEIGHT_TEXTURE_WIDTH rgba32uint texels, at least `texels`
 * of them (at least one row), filled by copies (copyTexels) or writes; `usage` adds to storage reads and
 * copies in.
 */
export function texelTexture(device: GPUDevice, label: string, texels: number, usage = 0): GPUTexture {
  const rows = Math.max(1, Math.ceil(texels / WEIGHT_TEXTURE_WIDTH));
  return device.createTexture({ label, size: [WEIGHT_TEXTURE_WIDTH, rows], format: 'rgba32uint', usage: GPUTextureUsage.STORAGE_BINDING | GPUTextureUsage.COPY_DST | usage });
}

/** Encode copies of the first `texels` vec4s of `buffer` into `texture` (texelTexture): whole rows, then the last row's part. */
export function copyTexels(encoder: GPUCommandEncoder, buffer: GPUBuffer, texture: GPUTexture, texels: number): void {
  const W = WEIGHT_TEXTURE_WIDTH;
  const full = Math.floor(texels / W);
  if (full > 0) encoder.copyBufferToTexture({ buffer, offset: 0, bytesPerRow: W * 16 }, { texture }, [W, full]);
  const rest = texels - full * W;
  if (rest > 0) encoder.copyBufferToTexture({ buffer, offset: full * W * 16, bytesPerRow: W * 16 }, { texture, origin: [0, full] }, [rest, 1]);
}

/** The bind group layout entry of a texture that texelsWgsl declares. */
export function texelsLayoutEntry(binding: number): GPUBindGroupLayoutEntry {
  return { binding, visibility: GPUShaderStage.COMPUTE, storageTexture: { access: 'read-only', format: 'rgba32uint', viewDimension: '2d' } };
}

/** The bind group layout entry of a 'weights' binding. */
export function weightsLayoutEntry(caps: GpuCaps, binding: number): GPUBindGroupLayoutEntry {
  return caps.weightTextures ? texelsLayoutEntry(binding) : { binding, visibility: GPUShaderStage.COMPUTE, buffer: { type: 'read-only-storage' } };
}

/** Most bytes one store may hold on this device (a binding, or a texture's rows). */
export function maxWeightStoreBytes(caps: GpuCaps): number {
  const binding = Math.min(caps.maxStorageBinding, caps.maxBufferSize);
  return caps.weightTextures ? Math.min(binding, caps.maxTextureDimension2D * ROW_BYTES) : binding;
}

/** A zeroed store of at least `bytes` bytes (whole texture rows for a texture). */
export function createWeightStore(device: GPUDevice, caps: GpuCaps, label: string, bytes: number): WeightStore {
  if (bytes > maxWeightStoreBytes(caps)) throw new Error(`weights ${label}: ${bytes} bytes are more than one store holds on this device (${maxWeightStoreBytes(caps)})`);
  if (!caps.weightTextures) {
    return device.createBuffer({ label, size: Math.max(16, Math.ceil(bytes / 16) * 16), usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC });
  }
  return texelTexture(device, label, Math.ceil(bytes / 16), GPUTextureUsage.COPY_SRC);
}

/** A store holding `data` from its first byte (the weight-store counterpart of KernelContext.storage). */
export function uploadWeights(device: GPUDevice, caps: GpuCaps, label: string, data: Uint8Array): WeightStore {
  const store = createWeightStore(device, caps, label, data.byteLength);
  writeWeights(device, store, 0, data);
  return store;
}

/** Bytes a store holds. */
export function weightStoreBytes(store: WeightStore): number {
  return isTexture(store) ? store.width * store.height * 16 : store.size;
}

/**
 * Write `data` at `byteOffset` (both multiples of 16) of a store, through the queue. A texture takes the
 * bytes row-major, as a buffer would hold them: a partial first row, whole rows, a partial last row.
 */
export function writeWeights(device: GPUDevice, store: WeightStore, byteOffset: number, data: Uint8Array): void {
  if (byteOffset % 16 !== 0 || data.byteLength % 16 !== 0) throw new Error(`weights: writes must be whole vec4s (offset ${byteOffset}, ${data.byteLength} bytes)`);
  if (byteOffset + data.byteLength > weightStoreBytes(store)) throw new Error(`weights: a write of ${data.byteLength} bytes at ${byteOffset} runs past the store's ${weightStoreBytes(store)}`);
  if (!isTexture(store)) {
    device.queue.writeBuffer(store, byteOffset, data.buffer, data.byteOffset, data.byteLength);
    return;
  }
  let at = 0;
  while (at < data.byteLength) {
    const texel = (byteOffset + at) / 16;
    const x = texel % WEIGHT_TEXTURE_WIDTH;
    const y = Math.floor(texel / WEIGHT_TEXTURE_WIDTH);
    const left = (data.byteLength - at) / 16;
    // From mid-row: to the row's end; from a row's start: as many whole rows as remain, else the rest.
    const [width, height] = x > 0 || left < WEIGHT_TEXTURE_WIDTH ? [Math.min(WEIGHT_TEXTURE_WIDTH - x, left), 1] : [WEIGHT_TEXTURE_WIDTH, Math.floor(left / WEIGHT_TEXTURE_WIDTH)];
    const bytes = width * height * 16;
    device.queue.writeTexture({ texture: store, origin: [x, y] }, data.subarray(at, at + bytes), { bytesPerRow: ROW_BYTES, rowsPerImage: height }, [width, height]);
    at += bytes;
  }
}
