/**
 * The playground: pick a specialist, chat with streaming output, see the raw exchange, time to first
 * token, tokens per second and the key's usage. The same page runs against `svc serve` (server mode: it
 * asks for a key) and as a static site whose service runs in this browser (browser mode: the key is the
 * local account's, and the model's load progress is shown). The mode is fixed when the page is built.
 */
import { startLocalService, type LoadProgress } from '../../adapters/service-worker/page.ts';
import { Api, ApiError } from './api.ts';
import { chatRequest, type Settings, type Turn } from './request.ts';

declare const __SVC_MODE__: 'server' | 'browser';

const KEY_STORAGE = 'svc-playground-key';
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;

let api: Api;
let turns: Turn[] = [];
let running: AbortController | undefined;
const specialistAbout = new Map<string, string>();

function settings(): Settings {
  return {
    specialist: $<HTMLSelectElement>('specialist').value,
    temperature: Number($<HTMLInputElement>('temperature').value),
    maxTokens: Number($<HTMLInputElement>('max-tokens').value),
    stream: $<HTMLInputElement>('stream').checked,
    labels: $<HTMLInputElement>('labels').value,
    context: $<HTMLTextAreaElement>('context').value,
    schema: $<HTMLTextAreaElement>('schema').value,
    tools: $<HTMLTextAreaElement>('tools').value,
  };
}

function showError(message: string | null): void {
  const el = $('error');
  el.hidden = message === null;
  el.textContent = message ?? '';
}

function addMessage(role: 'user' | 'assistant', text: string): HTMLLIElement {
  const li = document.createElement('li');
  li.className = role;
  li.textContent = text;
  $('messages').appendChild(li);
  li.scrollIntoView({ block: 'end' });
  return li;
}

/** Only the specialist's own inputs are shown. */
function showInputsFor(name: string): void {
  for (const section of document.querySelectorAll<HTMLElement>('section[data-for]')) section.hidden = !section.dataset.for!.split(' ').includes(name);
  $('specialist-about').textContent = specialistAbout.get(name) ?? '';
}

async function loadSpecialists(): Promise<void> {
  const models = await api.get<{ data: { id: string; description?: string }[] }>('/models');
  const select = $<HTMLSelectElement>('specialist');
  const previous = select.value;
  select.replaceChildren();
  for (const m of models.data) {
    const name = m.id.replace(/^svc-/, '');
    if (m.description) specialistAbout.set(name, m.description);
    select.appendChild(new Option(name, name));
  }
  select.value = [...select.options].some((o) => o.value === previous) ? previous : (select.options[0]?.value ?? '');
  showInputsFor(select.value);
}

async function refreshUsage(): Promise<void> {
  const u = await api.get<{ requests_used: number; requests_limit: number; tokens_used: number; by_specialist: Record<string, number> }>('/usage');
  const rows = Object.entries(u.by_specialist).map(([k, v]) => `<tr><td>${escape(k)}</td><td>${v}</td></tr>`).join('');
  $('usage').innerHTML = `<p><strong>${u.requests_used}</strong> of ${u.requests_limit} requests · ${u.tokens_used} tokens</p><table>${rows}</table>`;
}

async function send(event: Event): Promise<void> {
  event.preventDefault();
  const prompt = $<HTMLTextAreaElement>('prompt');
  const text = prompt.value.trim();
  if (!text || running) return;
  showError(null);
  const s = settings();
  // Only chat and code keep the conversation; the other specialists answer each message on its own.
  const history = s.specialist === 'chat' || s.specialist === 'code' ? turns : [];
  const asked: Turn[] = [...history, { role: 'user', content: text }];
  let body: Record<string, unknown>;
  try {
    body = chatRequest(s, asked);
  } catch (e) {
    return showError((e as Error).message);
  }
  prompt.value = '';
  addMessage('user', text);
  const li = addMessage('assistant', '');
  li.classList.add('pending');
  running = new AbortController();
  $<HTMLButtonElement>('send').disabled = true;
  $<HTMLButtonElement>('stop').disabled = false;
  $('stats').textContent = '';
  const started = performance.now();
  let first: number | undefined;
  let answer = '';
  let tokens: number | undefined;
  let finish = '';
  const take = (content: unknown, toolCalls: unknown) => {
    if (typeof content === 'string' && content) {
      first ??= performance.now();
      answer += content;
    }
    if (Array.isArray(toolCalls) && toolCalls.length) {
      first ??= performance.now();
      answer += JSON.stringify(toolCalls);
    }
    li.textContent = answer;
  };
  try {
    const whole = await api.chat(body, running.signal, (chunk) => {
      const choice = (chunk.choices as { delta?: { content?: unknown; tool_calls?: unknown }; finish_reason?: string }[] | undefined)?.[0];
      if (choice?.delta) take(choice.delta.content, choice.delta.tool_calls);
      if (choice?.finish_reason) finish = choice.finish_reason;
      const usage = chunk.usage as { completion_tokens?: number } | null | undefined;
      if (usage?.completion_tokens !== undefined) tokens = usage.completion_tokens;
    });
    if (whole) {
      const choice = (whole.choices as { message: { content: unknown; tool_calls?: unknown }; finish_reason: string }[])[0];
      take(choice.message.content, choice.message.tool_calls);
      finish = choice.finish_reason;
      tokens = (whole.usage as { completion_tokens: number }).completion_tokens;
    }
    turns = [...asked, { role: 'assistant', content: answer }];
    const end = performance.now();
    const ttft = (first ?? end) - started;
    const rate = tokens !== undefined && first !== undefined && end > first && tokens > 1 ? (tokens - 1) / ((end - first) / 1000) : undefined;
    const stats = `TTFT ${Math.round(ttft)} ms · ${rate === undefined ? '–' : rate.toFixed(1)} tok/s · ${tokens ?? '?'} tokens · ${finish}`;
    $('stats').textContent = stats;
    const meta = document.createElement('span');
    meta.className = 'meta';
    meta.textContent = stats;
    li.appendChild(meta);
  } catch (e) {
    const aborted = running.signal.aborted;
    li.textContent = answer + (aborted ? ' [stopped]' : '');
    if (!aborted) showError(e instanceof ApiError ? e.message : `The request failed: ${(e as Error).message}`);
  } finally {
    li.classList.remove('pending');
    running = undefined;
    $<HTMLButtonElement>('send').disabled = false;
    $<HTMLButtonElement>('stop').disabled = true;
    $('raw-request').textContent = api.last.request;
    $('raw-response').textContent = api.last.response;
    await refreshUsage().catch(() => {});
  }
}

function showProgress(p: LoadProgress): void {
  const bar = $<HTMLProgressElement>('load');
  const mb = (n: number) => `${(n / 1e6).toFixed(1)} MB`;
  const text: Record<LoadProgress['phase'], string> = {
    idle: 'starting…',
    download: p.total ? `downloading ${mb(p.loaded)} of ${mb(p.total)}${p.fromCache ? ` (${mb(p.fromCache)} from the cache)` : ''}` : 'downloading…',
    upload: `uploading to the GPU: ${mb(p.loaded)} of ${mb(p.total)}`,
    compile: 'compiling GPU pipelines…',
    ready: `ready: ${p.message ?? 'model loaded'}`,
    error: `failed: ${p.message ?? 'unknown error'}`,
  };
  // Download, upload and compile fill the bar in that order.
  const within = p.total ? p.loaded / p.total : 0;
  bar.value = { idle: 0, download: 0.7 * within, upload: 0.7 + 0.25 * within, compile: 0.95, ready: 1, error: bar.value }[p.phase];
  $('load-text').textContent = text[p.phase];
  if (p.phase === 'error') showError(`The model could not load: ${p.message}`);
}

async function start(): Promise<void> {
  $('mode').textContent = __SVC_MODE__ === 'server' ? 'server' : 'in this browser';
  $('temperature').addEventListener('input', () => ($('temperature-value').textContent = $<HTMLInputElement>('temperature').value));
  $('specialist').addEventListener('change', () => showInputsFor($<HTMLSelectElement>('specialist').value));
  $('composer').addEventListener('submit', (e) => void send(e));
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) $<HTMLFormElement>('composer').requestSubmit();
  });
  $('stop').addEventListener('click', () => running?.abort());
  $('clear').addEventListener('click', () => {
    turns = [];
    $('messages').replaceChildren();
    $('stats').textContent = '';
  });

  if (__SVC_MODE__ === 'browser') {
    $('load-section').hidden = false;
    let local;
    try {
      local = await startLocalService();
    } catch (e) {
      return showError(`The in-browser service could not start: ${(e as Error).message}`);
    }
    $('model').textContent = local.mode === 'service-worker' ? 'service worker' : 'dedicated worker';
    local.onProgress(showProgress);
    api = new Api(local.baseURL, local.fetch, local.apiKey);
  } else {
    $('key-section').hidden = false;
    const saved = localStorage.getItem(KEY_STORAGE) ?? '';
    $<HTMLInputElement>('key').value = saved;
    api = new Api(`${location.origin}/v1`, fetch.bind(window), saved);
    $('save-key').addEventListener('click', () => {
      const key = $<HTMLInputElement>('key').value.trim();
      localStorage.setItem(KEY_STORAGE, key);
      api.setKey(key);
      void connect();
    });
    $('forget-key').addEventListener('click', () => {
      localStorage.removeItem(KEY_STORAGE);
      $<HTMLInputElement>('key').value = '';
      api.setKey('');
      $('usage').textContent = '—';
    });
    if (!saved) return showError('Enter your API key (svc keys create prints one) and press Use.');
  }
  await connect();
}

async function connect(): Promise<void> {
  showError(null);
  try {
    await loadSpecialists();
    await refreshUsage();
  } catch (e) {
    showError(e instanceof ApiError ? e.message : `Cannot reach the API: ${(e as Error).message}`);
  }
}

function escape(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

void start();
