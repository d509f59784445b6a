/**
 * Where the real-GPU candidate looks for Vulkan drivers: the loader's own folders, and the folder NVIDIA
 * containers mount the driver's manifest in, which the loader does not search (so the engine names such
 * a manifest to it). Real folders in a temporary directory; no GPU is needed.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { vulkanDriverManifests } from '../../engine/platform/node-gpu.ts';

const root = mkdtempSync(join(tmpdir(), 'svc-vk-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function manifest(dir: string, name: string): string {
  mkdirSync(join(root, dir, 'vulkan/icd.d'), { recursive: true });
  const path = join(root, dir, 'vulkan/icd.d', name);
  writeFileSync(path, '{"file_format_version":"1.0.0","ICD":{"library_path":"libGLX_nvidia.so.0","api_version":"1.3.0"}}\n');
  return path;
}

describe('Vulkan driver manifests', () => {
  const env = { XDG_CONFIG_DIRS: join(root, 'config'), XDG_DATA_DIRS: join(root, 'data'), HOME: join(root, 'home') };

  it('finds none where there are none, and lists where it looked', () => {
    const r = vulkanDriverManifests(env, join(root, 'nvidia-empty'));
    expect(r.found).toEqual([]);
    expect(r.searched).toContain(join(root, 'data', 'vulkan/icd.d'));
    expect(r.searched).toContain(join(root, 'nvidia-empty', 'vulkan/icd.d'));
  });

  it("a manifest in NVIDIA's mount is found and marked as one the loader would not see", () => {
    const mounted = manifest('nvidia', 'nvidia_icd.json');
    const own = manifest('data', 'radeon_icd.x86_64.json');
    const r = vulkanDriverManifests(env, join(root, 'nvidia'));
    expect(r.found).toEqual([own, mounted]);
    expect(r.unseen).toEqual([mounted]);
  });

  it("the user's VK_ICD_FILENAMES is the whole list, with nothing added", () => {
    const own = manifest('mine', 'icd.json');
    const r = vulkanDriverManifests({ ...env, VK_ICD_FILENAMES: `${own}:${join(root, 'missing.json')}` }, join(root, 'nvidia'));
    expect(r.found).toEqual([own]);
    expect(r.unseen).toEqual([]);
  });
});
