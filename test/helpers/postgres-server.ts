/**
 * A real PostgreSQL for tests: Debian's server binaries (/usr/lib/postgresql/<version>/bin, the newest
 * there; $SVC_POSTGRES_BIN overrides) with a fresh cluster in a temporary folder, listening on a free
 * loopback TCP port with its unix socket in that folder too, trust authentication, fsync off (a killed
 * server still loses nothing: the writes are in the OS). stop() is a clean shutdown, kill() a crash
 * (SIGKILL to the postmaster and its backends); start() brings it back on the same folder and port.
 *
 * initdb refuses to run as root, and the tests run as root here and in CI: then every server command
 * runs as the `postgres` system user (runuser) and the temporary folder belongs to it.
 *
 * `postgresAvailable` is false where the binaries are absent, so the tests that need them skip with
 * POSTGRES_MISSING as the reason.
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { freePort } from './free-port.ts';

const RUN_AS = 'postgres';

function findBinDir(): string | undefined {
  const override = process.env.SVC_POSTGRES_BIN;
  if (override) return existsSync(join(override, 'initdb')) && existsSync(join(override, 'pg_ctl')) ? override : undefined;
  const root = '/usr/lib/postgresql';
  let versions: string[];
  try {
    versions = readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v));
  } catch {
    return undefined;
  }
  versions.sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(root, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'pg_ctl')));
}

const isRoot = process.getuid?.() === 0;

/** uid and gid of the user that runs the server when we are root. */
function runAsIds(): { uid: number; gid: number } | undefined {
  const uid = spawnSync('id', ['-u', RUN_AS], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', RUN_AS], { encoding: 'utf8' });
  if (uid.status !== 0 || gid.status !== 0) return undefined;
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

export const POSTGRES_BIN = findBinDir();
const ids = isRoot ? runAsIds() : undefined;
const runuserFound = !isRoot || spawnSync('runuser', ['--help'], { stdio: 'ignore' }).status === 0;

export const POSTGRES_MISSING = !POSTGRES_BIN
  ? `PostgreSQL's initdb and pg_ctl not found in ${process.env.SVC_POSTGRES_BIN || '/usr/lib/postgresql/*/bin'} (scripts/install.sh installs the postgresql package; $SVC_POSTGRES_BIN names another folder)`
  : isRoot && !ids
    ? `running as root, and there is no "${RUN_AS}" system user to run PostgreSQL as (initdb refuses root; the postgresql package creates the user)`
    : !runuserFound
      ? 'running as root without runuser (util-linux) to start PostgreSQL as another user'
      : '';
export const postgresAvailable = POSTGRES_MISSING === '';

export interface PostgresServer {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  url: string;
  port: number;
  /** A new empty database on this server, by URL (a test's own schema, isolated from the others'). */
  createDatabase(): Promise<string>;
  /** Clean shutdown (pg_ctl stop -m fast): clients are told, then disconnected. */
  stop(): Promise<void>;
  /** Crash: SIGKILL to the postmaster and every backend; the next start() recovers. */
  kill(): Promise<void>;
  /** Starts again on the same folder and port. */
  start(): Promise<void>;
  /** Stops it and deletes its folder. */
  close(): Promise<void>;
}

interface Ran {
  code: number | null;
  output: string;
}

function run(bin: string, args: string[]): Promise<Ran> {
  const [cmd, argv] = isRoot ? ['runuser', ['-u', RUN_AS, '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

async function mustRun(bin: string, args: string[]): Promise<void> {
  const r = await run(bin, args);
  if (r.code !== 0) throw new Error(`${bin} ${args.join(' ')} failed (${r.code}):\n${r.output}`);
}

let nextDatabase = 0;

export async function startPostgres(): Promise<PostgresServer> {
  if (!POSTGRES_BIN) throw new Error(POSTGRES_MISSING);
  const bin = (name: string) => join(POSTGRES_BIN, name);
  const dir = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  chmodSync(dir, 0o700);
  if (ids) chownSync(dir, ids.uid, ids.gid);
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const port = await freePort();

  await mustRun(bin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync']);
  appendFileSync(
    join(data, 'postgresql.conf'),
    [
      '',
      '# svc tests',
      `port = ${port}`,
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'max_connections = 300',
      'fsync = off',
      'full_page_writes = off',
      "log_min_messages = 'warning'",
      '',
    ].join('\n'),
  );

  let running = false;
  const pgCtl = (...args: string[]) => mustRun(bin('pg_ctl'), ['-D', data, ...args]);
  const start = async () => {
    await pgCtl('-l', log, '-w', '-t', '60', 'start').catch((e: Error) => {
      throw new Error(`${e.message}\n${existsSync(log) ? readFileSync(log, 'utf8').slice(-4000) : ''}`);
    });
    running = true;
  };
  const stop = async () => {
    if (!running) return;
    await pgCtl('-m', 'fast', '-w', '-t', '60', 'stop');
    running = false;
  };
  const kill = async () => {
    if (!running) return;
    const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
    // Stopped first so it forks no new backend between listing its children and killing them.
    process.kill(pid, 'SIGSTOP');
    const pids = [...childrenOf(pid), pid];
    for (const p of pids) {
      try {
        process.kill(p, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // Gone once reaped (by PID 1, whose child the postmaster is); if that never happens, the lock file's
    // process is dead anyway, so the file goes and the next start does not wait for it.
    for (let i = 0; i < 400 && pids.some(exists); i++) await new Promise((r) => setTimeout(r, 25));
    if (exists(pid)) rmSync(join(data, 'postmaster.pid'), { force: true });
    running = false;
  };
  // A test process that ends without close() must not leave a server behind.
  const onExit = () => {
    if (running) spawnSync(isRoot ? 'runuser' : bin('pg_ctl'), isRoot ? ['-u', RUN_AS, '--', bin('pg_ctl'), '-D', data, '-m', 'immediate', 'stop'] : ['-D', data, '-m', 'immediate', 'stop']);
  };
  process.once('exit', onExit);

  await start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  return {
    url,
    port,
    start,
    stop,
    kill,
    async createDatabase() {
      const name = `svc_test_${process.pid}_${nextDatabase++}`;
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://postgres@127.0.0.1:${port}/${name}`;
    },
    async close() {
      await stop();
      process.removeListener('exit', onExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The processes whose parent is `pid` (its backends and helpers), from /proc. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // Field 4 of stat is the parent pid; the command name (field 2) may hold spaces, so split after its ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) found.push(Number(entry));
    } catch {
      // exited meanwhile
    }
  }
  return found;
}

/** The process still exists (a zombie too: PostgreSQL's own check of its lock file counts it as running). */
function exists(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}
