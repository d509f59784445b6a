/**
 * Node file writing for models: the write-side twin of FileSource. Used for downloads (appending to a `.part`)
 * and for writing GGUF files, which must never be left half-written under their final name.
 */
import { open, rename, rm, type FileHandle } from 'node:fs/promises';

export class FileSink {
  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    /** Bytes in the file after the last completed write. */
    public position: number,
  ) {}

  /** Opens `path` for writing: truncated, or (append) continued from its current end. */
  static async open(path: string, { append = false } = {}): Promise<FileSink> {
    const handle = await open(path, append ? 'a' : 'w').catch((e: NodeJS.ErrnoException) => {
      throw new Error(`cannot open ${path} for writing: ${e.code === 'ENOENT' ? 'its folder does not exist' : e.message}`);
    });
    const start = append ? (await handle.stat()).size : 0;
    return new FileSink(path, handle, start);
  }

  /** Writes all of `chunk` (fs writes may be partial) before resolving. */
  async write(chunk: Uint8Array): Promise<void> {
    let done = 0;
    while (done < chunk.byteLength) {
      const { bytesWritten } = await this.handle.write(chunk, done, chunk.byteLength - done).catch((e: NodeJS.ErrnoException) => {
        throw new Error(`writing ${this.path} failed at byte ${this.position + done}: ${e.code === 'ENOSPC' ? 'the disk is full' : e.message}`);
      });
      done += bytesWritten;
    }
    this.position += done;
  }

  async close(): Promise<void> {
    await this.handle.close();
  }
}

/**
 * Writes `path` through `fill`, into `path.tmp` first and renamed on success, so an interrupted write
 * never leaves a file that looks complete.
 */
export async function writeFileAtomically<T>(path: string, fill: (sink: FileSink) => Promise<T>): Promise<T> {
  const tmp = `${path}.tmp`;
  const sink = await FileSink.open(tmp);
  try {
    const result = await fill(sink);
    await sink.close();
    await rename(tmp, path);
    return result;
  } catch (e) {
    await sink.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
}
