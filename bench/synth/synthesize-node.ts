/** Writes a synthetic model to a file by streaming (never more than one chunk of one tensor in memory). */
import { planGguf, writeGguf, type GgufLayout } from '../../engine/gguf/write.ts';
import { writeFileAtomically } from '../../engine/loader/file-sink-node.ts';
import { preset as presetByName } from './presets.ts';
import { synthModel, type SynthType } from './model.ts';

export interface SynthesizeOptions {
  preset: string;
  type: SynthType;
  seed?: number;
  onProgress?: (writtenBytes: number, totalBytes: number) => void;
}

export async function synthesizeToFile(path: string, { preset, type, seed = 1, onProgress }: SynthesizeOptions): Promise<GgufLayout> {
  const model = synthModel(presetByName(preset), type, seed, preset);
  const total = planGguf(model.spec).layout.fileSize;
  return writeFileAtomically(path, (sink) => {
    let written = 0;
    const counted = {
      write: async (chunk: Uint8Array) => {
        await sink.write(chunk);
        written += chunk.byteLength;
        onProgress?.(written, total);
      },
    };
    return writeGguf(counted, model.spec, model.tensorData);
  });
}
