/** The JSON log lines (pino) a child process writes to a stream, one object at a time; other lines are skipped. */
import type { Readable } from 'node:stream';

export function onJsonLogLines(stream: Readable, onEntry: (entry: Record<string, unknown>) => void): void {
  let pending = '';
  stream.on('data', (d: Buffer) => {
    pending += d;
    const lines = pending.split('\n');
    pending = lines.pop()!;
    for (const line of lines) {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        continue;
      }
      onEntry(entry);
    }
  });
}
