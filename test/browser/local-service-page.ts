/**
 * A test page on the static site: starts the in-browser service (service worker, or the dedicated-worker
 * fallback) and calls it the way an application would, with the official `openai` client and with fetch.
 */
import OpenAI from 'openai';
import { startLocalService, type LoadProgress, type LocalService } from '../../adapters/service-worker/page.ts';

declare global {
  interface Window {
    svcStart(prefer?: 'service-worker' | 'dedicated-worker'): Promise<{ mode: string; baseURL: string; progress: LoadProgress[] }>;
    svcModels(): Promise<string[]>;
    svcChat(body: Record<string, unknown>): Promise<unknown>;
    svcRaw(path: string, init?: { method?: string; body?: unknown; key?: string | null }): Promise<{ status: number; headers: Record<string, string>; text: string; chunks: number }>;
    svcAbortAfterFirstChunk(body: Record<string, unknown>): Promise<{ text: string }>;
    svcStatus(): Promise<Record<string, unknown>>;
    svcUnregister(): Promise<void>;
  }
}

let local: LocalService;
let client: OpenAI;

/** What the page did, on the page, so a screenshot shows it. */
function show(line: string): void {
  const pre = document.querySelector('pre') ?? document.body.appendChild(document.createElement('pre'));
  pre.textContent += line + '\n';
}

window.svcStart = async (prefer) => {
  local = await startLocalService({ prefer });
  const progress: LoadProgress[] = [];
  local.onProgress((p) => progress.push(p));
  await local.ready();
  // With the service worker in control, the client needs nothing but the origin (as the issue's example
  // has it); the dedicated-worker fallback is reached through the fetch startLocalService gives.
  client =
    local.mode === 'service-worker'
      ? new OpenAI({ baseURL: location.origin + '/v1', apiKey: local.apiKey, dangerouslyAllowBrowser: true, maxRetries: 0 })
      : new OpenAI({ baseURL: local.baseURL, apiKey: local.apiKey, fetch: local.fetch, dangerouslyAllowBrowser: true, maxRetries: 0 });
  const download = progress.filter((p) => p.phase === 'download').at(-1);
  show(`started in a ${local.mode} at ${local.baseURL}; phases ${[...new Set(progress.map((p) => p.phase))].join(' → ')}${download ? `; model ${download.total} bytes, ${download.fromCache ?? 0} from the cache` : ''}`);
  return { mode: local.mode, baseURL: local.baseURL, progress };
};

window.svcModels = async () => (await client.models.list()).data.map((m) => m.id);

window.svcChat = async (body) => {
  const answer = (await client.chat.completions.create(body as never)) as unknown as { choices: { message: { content: string } }[]; usage: { completion_tokens: number } };
  show(`chat: ${JSON.stringify(answer.choices[0].message.content)} (${answer.usage.completion_tokens} tokens)`);
  return answer;
};

/** A request as raw bytes: the status, headers and body text as the page's fetch sees them, and how many reads the body took. */
window.svcRaw = async (path, init = {}) => {
  const key = init.key === undefined ? local.apiKey : init.key;
  const res = await local.fetch(new URL(path.replace(/^\//, ''), local.baseURL.replace(/v1$/, '')), {
    method: init.method ?? (init.body ? 'POST' : 'GET'),
    headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...(init.body ? { 'content-type': 'application/json' } : {}) },
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const headers: Record<string, string> = {};
  res.headers.forEach((v, k) => (headers[k] = v));
  let text = '';
  let chunks = 0;
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    chunks++;
    text += dec.decode(value, { stream: true });
  }
  return { status: res.status, headers, text, chunks };
};

window.svcAbortAfterFirstChunk = async (body) => {
  const controller = new AbortController();
  const res = await local.fetch(new URL('chat/completions', local.baseURL + '/'), {
    method: 'POST',
    headers: { authorization: `Bearer ${local.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ ...body, stream: true }),
    signal: controller.signal,
  });
  const reader = res.body!.getReader();
  const { value } = await reader.read();
  controller.abort();
  return { text: new TextDecoder().decode(value) };
};

window.svcStatus = async () => (await (await local.fetch(new URL('svc/status', local.baseURL.replace(/v1$/, '')))).json()) as Record<string, unknown>;

window.svcUnregister = async () => {
  for (const r of await navigator.serviceWorker.getRegistrations()) await r.unregister();
};

declare global {
  interface Window {
    svcDownload(url: string, chunkBytes: number, stopAfterChunks?: number): Promise<{ completed: boolean; loaded: number; fromCache: number; total: number; checksum?: number }>;
  }
}

/** A model download straight through the cache source, stopped after some chunks (a closed tab) and resumed. */
window.svcDownload = async (url, chunkBytes, stopAfterChunks) => {
  const { cachedModel } = await import('../../engine/loader/cache-storage-source.ts');
  const controller = new AbortController();
  let last = { loaded: 0, fromCache: 0, total: 0 };
  let chunks = 0;
  try {
    const source = await cachedModel(url, {
      chunkBytes,
      signal: controller.signal,
      onProgress: (p) => {
        last = p;
        if (++chunks === stopAfterChunks) controller.abort();
      },
    });
    // Every byte, read back from the cache in uneven pieces that straddle chunk borders.
    const size = await source.size();
    let checksum = 0;
    for (let at = 0; at < size; ) {
      const n = Math.min(size - at, 100_003);
      const bytes = await source.read(at, n);
      for (let i = 0; i < bytes.length; i++) checksum = (checksum * 31 + bytes[i]) >>> 0;
      at += n;
    }
    return { completed: true, ...last, checksum };
  } catch (e) {
    if (!controller.signal.aborted) throw e;
    return { completed: false, ...last };
  }
};
