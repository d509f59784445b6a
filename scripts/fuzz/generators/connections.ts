/**
 * Connection tricks on raw sockets: slowloris, trickled bodies, pipelining, garbage, HTTP/1.0, clients that
 * leave mid-stream or mid-body, and crowds of idle sockets. Each is counted by what the server answered
 * or did (a status, or `closed`).
 */
import type { Socket } from 'node:net';
import { bearer, CHAT, chatBody, type Case, type Generator, type Outcome } from '../cases.ts';
import { encodeRequest, errorCode, openSocket, parseResponse, sendBytes, type Target } from '../raw-http.ts';

/** Waits until the socket gets an answer or closes, up to `ms`; what the server did. */
function await_(sock: Socket, ms: number, started: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (status: Outcome['status']) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      const parsed = parseResponse(Buffer.concat(chunks));
      resolve({ status: parsed ? parsed.status : status, code: parsed ? errorCode(parsed.body) : null, ms: performance.now() - started });
    };
    const timer = setTimeout(() => finish('timeout'), ms);
    sock.on('data', (d: Buffer) => {
      chunks.push(d);
      if (parseResponse(Buffer.concat(chunks))?.complete) finish('closed');
    });
    sock.on('close', () => finish('closed'));
    sock.on('error', () => finish('closed'));
  });
}

function conn(name: string, exchanges: number, expect: (number | string)[], run: (t: Target) => Promise<Outcome[]>, background = false): Case {
  return { category: 'connections', name: `connections/${name}`, exchanges, expect, run, background };
}

const slowloris: Generator = (g) => {
  const trickle = g.rng.bool();
  const partial = `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nContent-Type: appl`;
  // The header timeout (10 s by default) answers 408 or closes; we give up at 15 s.
  return conn('slowloris', 1, [408, 'closed'], async (t) => {
    const started = performance.now();
    const sock = await openSocket(t);
    sock.write(partial);
    const ticker = trickle ? setInterval(() => sock.writable && sock.write('i'), 1000) : undefined;
    try {
      return [await await_(sock, 15_000, started)];
    } finally {
      clearInterval(ticker);
    }
  }, true);
};

const slowBody: Generator = (g) => {
  const body = JSON.stringify(chatBody());
  const sent = g.rng.int(1, body.length - 1);
  // Headers complete, body stops: the request timeout (30 s) answers 408.
  return conn('slow-body', 1, [408, 'closed'], async (t) => {
    const started = performance.now();
    const sock = await openSocket(t);
    const bytes = encodeRequest(t, { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], bearer(g.keys.main)], body });
    sock.write(bytes.subarray(0, bytes.length - body.length + sent));
    return [await await_(sock, 40_000, started)];
  }, true);
};

/** Statuses of every response in a byte stream (answers to pipelined requests). */
function statuses(buf: Buffer): number[] {
  return [...buf.toString('latin1').matchAll(/HTTP\/1\.[01] (\d{3}) /g)].map((m) => Number(m[1]));
}

function readAll(t: Target, bytes: Buffer, ms: number): Promise<{ buf: Buffer; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    openSocket(t).then((sock) => {
      const chunks: Buffer[] = [];
      const timer = setTimeout(() => sock.destroy(), ms);
      sock.on('data', (d: Buffer) => chunks.push(d));
      sock.on('error', () => {});
      sock.on('close', () => {
        clearTimeout(timer);
        resolve({ buf: Buffer.concat(chunks), ms: performance.now() - started });
      });
      sock.write(bytes);
    }, reject);
  });
}

const pipelinedGarbage: Generator = (g) => {
  const garbage = Buffer.from(Array.from({ length: g.rng.int(1, 4000) }, () => g.rng.int(0, 255)));
  const ok = Buffer.from('GET /health HTTP/1.1\r\nHost: x\r\n\r\n');
  return conn('pipelined-garbage', 2, [200, 400, 431, 'closed'], async (t) => {
    const { buf, ms } = await readAll(t, Buffer.concat([ok, garbage]), 15_000);
    const s = statuses(buf);
    return [0, 1].map((i) => ({ status: s[i] ?? 'closed', code: null, ms }));
  });
};

const pipelinedMany: Generator = (g) => {
  const n = g.rng.int(5, 60);
  const one = (last: boolean) => `GET /health HTTP/1.1\r\nHost: x${last ? '\r\nConnection: close' : ''}\r\n\r\n`;
  const bytes = Buffer.from(Array.from({ length: n }, (_, i) => one(i === n - 1)).join(''));
  return conn('pipelined-health', n, [200], async (t) => {
    const { buf, ms } = await readAll(t, bytes, 15_000);
    const s = statuses(buf);
    return Array.from({ length: n }, (_, i) => ({ status: s[i] ?? 'closed', code: null, ms }));
  });
};

const garbageOnly: Generator = (g) => {
  const bytes = g.rng.pick([
    Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]), // a TLS ClientHello start
    Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'),
    Buffer.from('\r\n\r\n\r\n'),
    Buffer.from('GET / HTTP/9.9\r\n\r\n'),
    Buffer.from('G\u0000T /health HTTP/1.1\r\n\r\n', 'latin1'),
    Buffer.from(`GET /health HTTP/1.1\r\n${'x'.repeat(20000)}\r\n\r\n`),
  ]);
  return conn('garbage', 1, [400, 408, 431, 505, 'closed'], async (t) => {
    const r = await sendBytes(t, bytes, 15_000);
    return [{ status: r.status, code: errorCode(r.body), ms: r.ms }];
  });
};

const http10: Generator = (g) => {
  const post = g.rng.bool();
  const body = JSON.stringify(chatBody());
  const bytes = post
    ? Buffer.from(`POST ${CHAT} HTTP/1.0\r\nContent-Type: application/json\r\nAuthorization: Bearer ${g.keys.main}\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
    : Buffer.from('GET /health HTTP/1.0\r\n\r\n');
  return conn(`http-1.0-${post ? 'post' : 'get'}`, 1, [200], async (t) => {
    const { buf, ms } = await readAll(t, bytes, 30_000);
    const p = parseResponse(buf);
    return [{ status: p?.status ?? 'closed', code: p ? errorCode(p.body) : null, ms }];
  });
};

const abortMidStream: Generator = (g) => {
  const body = JSON.stringify(chatBody({ model: g.rng.pick(['svc-chat', 'svc-code', 'svc-summarise']), max_tokens: 8, stream: true }));
  return conn('abort-mid-stream', 1, [200], async (t) => {
    const started = performance.now();
    const sock = await openSocket(t);
    return new Promise<Outcome[]>((resolve) => {
      const chunks: Buffer[] = [];
      let done = false;
      const finish = (status: Outcome['status']) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        sock.destroy();
        resolve([{ status, code: null, ms: performance.now() - started }]);
      };
      const timer = setTimeout(() => finish('timeout'), 60_000);
      sock.on('data', (d: Buffer) => {
        chunks.push(d);
        const text = Buffer.concat(chunks).toString('latin1');
        const p = parseResponse(Buffer.concat(chunks));
        if (p && (p.status !== 200 || text.includes('data: '))) finish(p.status);
      });
      sock.on('close', () => finish('closed'));
      sock.on('error', () => finish('closed'));
      sock.write(encodeRequest(t, { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], bearer(g.keys.main)], body }));
    });
  });
};

const abortMidBody: Generator = (g) => {
  const body = JSON.stringify(chatBody({ x: 'p'.repeat(g.rng.int(10, 200_000)) }));
  return conn('abort-mid-body', 1, ['client-left'], async (t) => {
    const started = performance.now();
    const sock = await openSocket(t);
    sock.on('error', () => {});
    const bytes = encodeRequest(t, { method: 'POST', path: CHAT, headers: [['Content-Type', 'application/json'], bearer(g.keys.main)], body });
    sock.write(bytes.subarray(0, Math.floor(bytes.length * 0.6)));
    await new Promise((r) => setTimeout(r, 50));
    sock.destroy();
    return [{ status: 'client-left', code: null, ms: performance.now() - started }];
  });
};

const idleSockets: Generator = (g) => {
  const n = g.rng.int(100, 300);
  return conn('idle-sockets', n, [408, 'closed'], async (t) => {
    const started = performance.now();
    const socks = await Promise.all(Array.from({ length: n }, () => openSocket(t).catch(() => undefined)));
    return Promise.all(socks.map((s) => (s ? await_(s, 15_000, started) : Promise.resolve<Outcome>({ status: 'refused', code: null, ms: 0 }))));
  }, true);
};

export const connectionGenerators: [Generator, number][] = [
  [slowloris, 3],
  [slowBody, 0.5],
  [pipelinedGarbage, 2],
  [pipelinedMany, 1],
  [garbageOnly, 2],
  [http10, 2],
  [abortMidStream, 3],
  [abortMidBody, 1],
  [idleSockets, 0.15],
];
