/**
 * The operators' port (`svc serve --metrics-port`): GET /metrics in Prometheus text format and GET /ready,
 * on its own listener so the metrics are never public by accident (bind it to a private address).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Readiness } from '../kit/observer.ts';
import type { ServiceMetrics } from './registry.ts';

export async function startMetricsServer(opts: { metrics: ServiceMetrics; readiness: Readiness; port: number; host: string }): Promise<{ server: Server; url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain' }).end('only GET\n');
    } else if (path === '/metrics') {
      opts.metrics.text().then(
        (text) => res.writeHead(200, { 'content-type': opts.metrics.contentType }).end(text),
        (e: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${e.message}\n`),
      );
    } else if (path === '/ready') {
      const state = opts.readiness.state;
      res.writeHead(state.ready ? 200 : 503, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(state));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('GET /metrics or /ready\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ port: opts.port, host: opts.host }, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    server,
    url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
    close: () => new Promise((r) => server.close(() => r())),
  };
}
