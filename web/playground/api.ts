/**
 * The calls the playground makes, with the raw text of every exchange kept for the "raw" panel. Streams
 * are read with fetch and parsed as Server-Sent Events here (a few lines, no client library), so the page
 * shows exactly the bytes the API sent. Errors carry the API's own message.
 */

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface Exchange {
  request: string;
  response: string;
}

export class Api {
  /** The last request and response, as text. */
  last: Exchange = { request: '', response: '' };

  constructor(
    private readonly baseURL: string,
    private readonly fetchImpl: typeof fetch,
    private key: string,
  ) {}

  setKey(key: string): void {
    this.key = key;
  }

  async get<T>(path: string): Promise<T> {
    const res = await this.fetchImpl(`${this.baseURL}${path}`, { headers: this.headers() });
    const text = await res.text();
    if (!res.ok) throw errorOf(res.status, text);
    return JSON.parse(text) as T;
  }

  /**
   * POSTs a chat completion; with `stream` each SSE data object goes to `onEvent` as it arrives. Returns the
   * whole answer (non-streamed) or nothing (streamed).
   */
  async chat(body: Record<string, unknown>, signal: AbortSignal, onEvent: (data: Record<string, unknown>) => void): Promise<Record<string, unknown> | undefined> {
    const request = JSON.stringify(body, null, 2);
    this.last = { request: `POST ${this.baseURL}/chat/completions\n\n${request}`, response: '' };
    const res = await this.fetchImpl(`${this.baseURL}/chat/completions`, { method: 'POST', headers: { ...this.headers(), 'content-type': 'application/json' }, body: JSON.stringify(body), signal });
    const head = `HTTP ${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n`;
    if (!res.ok || !(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      const text = await res.text();
      this.last.response = head + text;
      if (!res.ok) throw errorOf(res.status, text);
      return JSON.parse(text) as Record<string, unknown>;
    }
    this.last.response = head;
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = '';
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      buffer += value;
      this.last.response += value;
      let cut: number;
      while ((cut = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        const data = event
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (!data || data === '[DONE]') continue;
        const parsed = JSON.parse(data) as Record<string, unknown>;
        // An error mid-stream arrives as an event carrying `error`.
        if (parsed.error) throw new ApiError(res.status, (parsed.error as { message?: string }).message ?? 'the stream failed');
        onEvent(parsed);
      }
    }
    return undefined;
  }

  private headers(): Record<string, string> {
    return this.key ? { authorization: `Bearer ${this.key}` } : {};
  }
}

function errorOf(status: number, text: string): ApiError {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    if (body.error?.message) return new ApiError(status, `${status}: ${body.error.message}`);
  } catch {
    // not JSON: fall through
  }
  return new ApiError(status, `${status}: ${text.slice(0, 300) || 'no body'}`);
}
