/** Node file access for models: reads ranges on demand, never the whole file at once. */
import { open, type FileHandle } from 'node:fs/promises';
import type { ModelSource } from './source.ts';

export class FileSource implements ModelSource {
  private handle: Promise<FileHandle> | undefined;
  private cachedSize: number | undefined;

  constructor(readonly name: string) {}

  private file(): Promise<FileHandle> {
    this.handle ??= open(this.name, 'r').catch((e: NodeJS.ErrnoException) => {
      this.handle = undefined;
      if (e.code === 'ENOENT') throw new Error(`model file not found: ${this.name}`);
      if (e.code === 'EISDIR') throw new Error(`model path is a directory, not a GGUF file: ${this.name}`);
      if (e.code === 'EACCES') throw new Error(`model file is not readable (permission denied): ${this.name}`);
      throw new Error(`cannot open model file ${this.name}: ${e.message}`);
    });
    return this.handle;
  }

  async size(): Promise<number> {
    if (this.cachedSize === undefined) {
      const st = await (await this.file()).stat();
      if (!st.isFile()) throw new Error(`model path is not a regular file: ${this.name}`);
      this.cachedSize = st.size;
    }
    return this.cachedSize;
  }

  async read(offset: number, length: number): Promise<Uint8Array> {
    const fh = await this.file();
    const out = new Uint8Array(length);
    let done = 0;
    while (done < length) {
      const { bytesRead } = await fh.read(out, done, length - done, offset + done);
      if (bytesRead === 0) throw new Error(`${this.name}: file ended at ${offset + done} while reading ${length} bytes at ${offset} (truncated?)`);
      done += bytesRead;
    }
    return out;
  }

  async close(): Promise<void> {
    const h = this.handle;
    this.handle = undefined;
    if (h) await (await h).close();
  }
}
