/** Counts committed before a kill -9 are all there afterwards, and the database opens cleanly. */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AccountAdmin } from '../../adapters/sqlite/accounts.ts';
import { openDatabase } from '../../adapters/sqlite/db.ts';
import { SqliteStore } from '../../adapters/sqlite/store.ts';
import { loadPlans } from '../../adapters/config-node.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('usage under kill -9', () => {
  it('keeps every count the writer had committed, and by-specialist rows still sum to the total', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-crash-'));
    const setup = openDatabase(dir);
    const { key } = new AccountAdmin(setup, loadPlans()).createAccount({ plan: 'solo', mode: 'live', now: 0 });
    setup.close();

    const child = spawn(process.execPath, ['--import', './bin/register.mjs', 'test/store/fixtures/usage-writer.ts', dir, String(key.id)], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    let printed = 0;
    let buffered = '';
    const killed = new Promise<void>((resolve, reject) => {
      child.stdout.on('data', (d: Buffer) => {
        buffered += d.toString();
        const lines = buffered.split('\n');
        buffered = lines.pop()!;
        if (lines.length) printed = Number(lines[lines.length - 1]);
        if (printed >= 300 && child.exitCode === null && !child.killed) child.kill('SIGKILL');
      });
      // 'close': the writer is gone and its pipes are drained.
      child.on('close', (code, signal) => (signal === 'SIGKILL' ? resolve() : reject(new Error(`writer exited ${code}: ${stderr}`))));
    });
    await killed;
    // The exact count the writer reached: its progress file, written synchronously after each commit
    // (what it printed may lag behind: a pipe to a busy parent buffers in the writer and dies with it).
    const lines = readFileSync(join(dir, 'progress'), 'utf8').split('\n').filter(Boolean);
    printed = Number(lines[lines.length - 1]);

    const db = openDatabase(dir);
    try {
      expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
      const store = new SqliteStore(db);
      const total = store.requestsInPeriod(key.id, 0);
      // At most one commit can land between the last printed line and the kill.
      expect(total).toBeGreaterThanOrEqual(printed);
      expect(total).toBeLessThanOrEqual(printed + 1);
      const rows = store.usageInPeriod(key.id, 0);
      expect(rows.reduce((s, r) => s + r.requests, 0)).toBe(total);
      expect(rows.reduce((s, r) => s + r.promptTokens + r.completionTokens, 0)).toBe(total * 7);
    } finally {
      db.close();
    }
  });
});
