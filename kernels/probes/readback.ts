/** Copy the first `count` u32 words of a storage buffer back to the CPU (probe checks and tests). */
export async function readWords(device: GPUDevice, src: GPUBuffer, count: number): Promise<Uint32Array> {
  const staging = device.createBuffer({ label: 'probe-readback', size: Math.max(4, count * 4), usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  const enc = device.createCommandEncoder();
  enc.copyBufferToBuffer(src, 0, staging, 0, count * 4);
  device.queue.submit([enc.finish()]);
  await staging.mapAsync(GPUMapMode.READ);
  const words = new Uint32Array(staging.getMappedRange().slice(0, count * 4));
  staging.unmap();
  staging.destroy();
  return words;
}
