import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createProgressBar, formatBytes } from '../../engine/loader/progress-bar-node.ts';

/** A real stream that records what was written; `isTTY` decides the display style as on process.stderr. */
function capture(isTTY: boolean) {
  let text = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _enc, done) {
        text += String(chunk);
        done();
      },
    }),
    { isTTY, columns: 100 },
  );
  return { stream, text: () => text };
}

describe('progress bar', () => {
  it('prints a plain line every 10% when stderr is not a terminal', () => {
    const out = capture(false);
    let t = 0;
    const bar = createProgressBar('model.gguf', { stream: out.stream, now: () => t });
    for (let i = 0; i <= 1000; i++) {
      t = i * 10;
      bar.update(i * 1000, 1_000_000);
    }
    bar.finish();
    const lines = out.text().trim().split('\n');
    expect(lines.length).toBe(12);
    expect(lines[0]).toBe('model.gguf:   0.0%  0 B / 976.6 KiB  0 B/s  ETA ?');
    expect(lines[5]).toBe('model.gguf:  50.0%  488.3 KiB / 976.6 KiB  97.7 KiB/s  ETA 0:05');
    expect(lines[10]).toBe('model.gguf: 100.0%  976.6 KiB / 976.6 KiB  97.7 KiB/s  ETA 0:00');
    expect(lines[11]).toBe('model.gguf: done, 976.6 KiB in 0:10');
    expect(out.text()).not.toContain('\r');
  });

  it('prints a line every 30 s when the total is unknown', () => {
    const out = capture(false);
    let t = 0;
    const bar = createProgressBar('x', { stream: out.stream, now: () => t });
    for (let s = 0; s <= 90; s++) {
      t = s * 1000;
      bar.update(s * 2048, undefined);
    }
    expect(out.text().trim().split('\n')).toHaveLength(4);
  });

  it('redraws one line with a bar on a terminal, at most every 100 ms, and ends it with a newline', () => {
    const out = capture(true);
    let t = 0;
    const bar = createProgressBar('model.gguf', { stream: out.stream, now: () => t });
    for (let i = 0; i <= 100; i++) {
      t = i * 20;
      bar.update(i * 10_000, 1_000_000);
    }
    bar.finish();
    const text = out.text();
    const draws = text.split('\r').length - 1;
    expect(draws).toBeGreaterThan(15);
    expect(draws).toBeLessThan(30);
    const half = /\rmodel\.gguf \[(#+)(-+)\]  50\.0%/.exec(text);
    expect(half?.[1].length).toBe(half?.[2].length);
    expect(new Set(text.split('\r').slice(1).map((l) => l.indexOf(']')))).toHaveProperty('size', 1);
    expect(text.endsWith('\n')).toBe(true);
    expect(text.trim().split('\n')).toHaveLength(1);
    expect(text).toMatch(/100\.0% .* done in 0:02/);
  });

  it('formats sizes', () => {
    expect(formatBytes(512)).toBe('512 B');
    expect(formatBytes(1536)).toBe('1.50 KiB');
    expect(formatBytes(2.5 * 1024 ** 3)).toBe('2.50 GiB');
    expect(formatBytes(138 * 1024 ** 2)).toBe('138.0 MiB');
  });
});
