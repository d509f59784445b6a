/** Shared by the fine-tuning tests: training files, waiting for a job, catching the client's errors. */
import OpenAI, { toFile } from 'openai';

/** `n` conversations teaching a fixed reply format. */
export function trainingJsonl(n = 6): string {
  const animals = ['cat', 'dog', 'bird', 'fish', 'frog', 'bear', 'fox', 'owl'];
  return Array.from({ length: n }, (_, i) => {
    const a = animals[i % animals.length];
    return JSON.stringify({ messages: [{ role: 'user', content: `Lily saw a ${a} in the park.` }, { role: 'assistant', content: `Label: ${a}` }] });
  }).join('\n');
}

export async function upload(client: OpenAI, text: string, name = 'train.jsonl') {
  return client.files.create({ file: await toFile(Buffer.from(text), name), purpose: 'fine-tune' });
}

export async function caught(p: Promise<unknown>): Promise<InstanceType<typeof OpenAI.APIError>> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  if (!(e instanceof OpenAI.APIError)) throw new Error(`expected an APIError, got ${String(e)}`);
  return e;
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export async function waitForStatus(client: OpenAI, id: string, statuses: string[], timeoutMs?: number) {
  return waitFor(`job ${id} to reach ${statuses.join('/')}`, async () => {
    const j = await client.fineTuning.jobs.retrieve(id);
    return statuses.includes(j.status) && j;
  }, timeoutMs);
}

export async function eventMessages(client: OpenAI, id: string): Promise<string[]> {
  const out: string[] = [];
  for await (const e of client.fineTuning.jobs.listEvents(id, { limit: 100 })) out.push(e.message);
  return out.reverse();
}
