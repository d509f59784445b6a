/**
 * A page written only against WebLLM's public client API (plus the standard worker and service-worker
 * APIs a WebLLM page uses anyway): it creates a WebWorkerMLCEngine or a ServiceWorkerMLCEngine and calls
 * it as WebLLM's documentation does. The scripts behind the workers run our engine
 * (adapters/webllm/*-host.ts); nothing here knows that. What it sees is also written into the page.
 */
import { CreateServiceWorkerMLCEngine, CreateWebWorkerMLCEngine, MLCEngine, type AppConfig, type ChatCompletion, type ChatCompletionChunk, type ChatCompletionRequest, type Completion, type CompletionCreateParams, type InitProgressReport, type MLCEngineInterface } from '@mlc-ai/web-llm';

type Kind = 'worker' | 'service-worker';

declare global {
  interface Window {
    webllmCreate(kind: Kind, modelId: string, appConfig: AppConfig): Promise<{ progress: InitProgressReport[]; ms: number }>;
    webllmChat(request: ChatCompletionRequest): Promise<ChatCompletion>;
    webllmStream(request: ChatCompletionRequest, interruptAfter?: number): Promise<{ chunks: ChatCompletionChunk[]; text: string; messageAtInterrupt?: string }>;
    webllmComplete(request: CompletionCreateParams): Promise<Completion | { chunks: Completion[]; text: string }>;
    webllmReload(modelId: string): Promise<{ progress: InitProgressReport[] }>;
    webllmCall(method: 'runtimeStatsText' | 'resetChat' | 'getMessage' | 'unload' | 'getGPUVendor' | 'getMaxStorageBufferBindingSize'): Promise<unknown>;
    /** The error a call rejects with, as text (WebLLM's worker client rejects with the worker's message). */
    webllmError(what: 'embedding' | 'grammar' | 'multi-model' | 'mlc-record' | 'after-unload' | 'bad-stream'): Promise<string>;
    webllmForward(inputIds: number[], steps: number): Promise<number[]>;
    webllmMLCEngineConstructMs(): number;
  }
}

let engine: MLCEngineInterface;
let progress: InitProgressReport[] = [];
const log = document.createElement('pre');
document.body.append(log);
const show = (line: string) => {
  log.textContent += line + '\n';
};
const initProgressCallback = (r: InitProgressReport) => {
  progress.push(r);
  show(`[${kind}] ${(r.progress * 100).toFixed(0)}% ${r.text}`);
};
let kind: Kind = 'worker';

window.webllmCreate = async (k, modelId, appConfig) => {
  kind = k;
  progress = [];
  const t0 = performance.now();
  if (k === 'worker') {
    engine = await CreateWebWorkerMLCEngine(new Worker(new URL('webllm-worker.js', location.href), { type: 'module' }), modelId, { appConfig, initProgressCallback });
  } else {
    await navigator.serviceWorker.register(new URL('webllm-sw.js', location.href), { type: 'module' });
    await navigator.serviceWorker.ready;
    // WebLLM's client posts to navigator.serviceWorker.controller: a first visit waits for the worker to claim the page.
    if (!navigator.serviceWorker.controller) await new Promise((r) => navigator.serviceWorker.addEventListener('controllerchange', r, { once: true }));
    engine = await CreateServiceWorkerMLCEngine(modelId, { appConfig, initProgressCallback });
  }
  return { progress, ms: performance.now() - t0 };
};

window.webllmChat = async (request) => {
  const r = (await engine.chat.completions.create({ ...request, stream: false })) as ChatCompletion;
  show(`[${kind}] chat: ${JSON.stringify(r.choices[0].message.content)} (${r.usage?.completion_tokens} tokens, ${r.usage?.extra.decode_tokens_per_s.toFixed(1)} tok/s)`);
  return r;
};

window.webllmStream = async (request, interruptAfter) => {
  const chunks: ChatCompletionChunk[] = [];
  let text = '';
  let pieces = 0;
  let messageAtInterrupt: string | undefined;
  const stream = (await engine.chat.completions.create({ ...request, stream: true })) as AsyncIterable<ChatCompletionChunk>;
  for await (const chunk of stream) {
    chunks.push(chunk);
    const delta = chunk.choices[0]?.delta.content ?? '';
    text += delta;
    if (delta) pieces++;
    if (interruptAfter !== undefined && pieces === interruptAfter && messageAtInterrupt === undefined) {
      engine.interruptGenerate();
      messageAtInterrupt = await engine.getMessage();
    }
  }
  show(`[${kind}] stream${interruptAfter !== undefined ? ' (interrupted)' : ''}: ${JSON.stringify(text)} in ${chunks.length} chunks, finish ${chunks.findLast((c) => c.choices[0]?.finish_reason)?.choices[0].finish_reason}`);
  return { chunks, text, messageAtInterrupt };
};

window.webllmComplete = async (request) => {
  if (!request.stream) {
    const r = (await engine.completions.create(request)) as Completion;
    show(`[${kind}] completion: ${JSON.stringify(r.choices[0].text)}`);
    return r;
  }
  const chunks: Completion[] = [];
  let text = '';
  for await (const c of (await engine.completions.create(request)) as AsyncIterable<Completion>) {
    chunks.push(c);
    text += c.choices[0]?.text ?? '';
  }
  return { chunks, text };
};

window.webllmReload = async (modelId) => {
  progress = [];
  await engine.reload(modelId);
  return { progress };
};

window.webllmCall = async (method) => {
  const r = await engine[method]();
  show(`[${kind}] ${method}(): ${r === undefined ? 'done' : String(r)}`);
  return r;
};

window.webllmError = async (what) => {
  try {
    if (what === 'embedding') await engine.embeddings.create({ input: 'hello' });
    else if (what === 'grammar') await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], response_format: { type: 'grammar', grammar: 'root ::= "a"' } });
    else if (what === 'bad-stream') await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 5000, stream: true });
    else if (what === 'multi-model') await engine.reload(['stories260K', 'tinystories-656k']);
    else if (what === 'mlc-record') await engine.reload('Llama-3.2-1B-Instruct-q4f16_1-MLC');
    else await engine.chat.completions.create({ messages: [{ role: 'user', content: 'hi' }] });
  } catch (e) {
    show(`[${kind}] ${what}: ${String(e)}`);
    return String(e);
  }
  return 'no error';
};

/** WebLLM's low-level loop: prefill the prompt's ids, then feed each sampled token back. */
window.webllmForward = async (inputIds, steps) => {
  await engine.resetChat();
  const out = [await engine.forwardTokensAndSample(inputIds, true)];
  while (out.length < steps) out.push(await engine.forwardTokensAndSample([out.at(-1)!], false));
  show(`[${kind}] forwardTokensAndSample: ${out.join(' ')}`);
  return out;
};

window.webllmMLCEngineConstructMs = () => {
  const t0 = performance.now();
  new MLCEngine();
  return performance.now() - t0;
};
