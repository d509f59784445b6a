/** `svc finetune` as a user runs it: options and data checked before the model loads, then a real small run. */
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { BytesSource } from '../../engine/loader/source.ts';
import { loraTensorName } from '../../engine/lora/adapter-file.ts';
import { sharedModel } from '../helpers/models.ts';
import { spawn } from 'node:child_process';
import { BIN, ROOT, runCli } from '../../scripts/lib/run-svc.ts';

const STORIES = sharedModel('stories260K.gguf');
const tmp = () => mkdtempSync(join(tmpdir(), 'svc-finetune-'));
const line = (user: string, reply: string) => JSON.stringify({ messages: [{ role: 'user', content: user }, { role: 'assistant', content: reply }] });

describe('svc finetune refuses bad input before loading the model', () => {
  it('lists every bad line of the data with its number, and trains nothing', async () => {
    const dir = tmp();
    const data = join(dir, 'train.jsonl');
    writeFileSync(data, [line('a', 'Label: a'), '{oops', line('b', 'Label: b'), JSON.stringify({ messages: [{ role: 'user', content: 'no reply' }] }), JSON.stringify({ messages: [{ role: 'wizard', content: 'x' }] })].join('\n'));
    const out = join(dir, 'adapter.gguf');
    const r = await runCli(['finetune', '--model', STORIES, '--data', data, '--out', out]);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`--data ${data} has 3 bad line(s); nothing was trained:`);
    expect(r.stderr).toMatch(/^line 2: not valid JSON/m);
    expect(r.stderr).toMatch(/^line 4: messages: no assistant message to learn from$/m);
    expect(r.stderr).toMatch(/^line 5: messages\.0\.role: /m);
    expect(r.stderr).not.toMatch(/^line [13]:/m);
    expect(r.stderr).not.toContain('loading weights');
    expect(r.stdout).toBe('');
    expect(readdirSync(dir)).toEqual(['train.jsonl']);

    // The validation file is checked the same way.
    const good = join(dir, 'good.jsonl');
    writeFileSync(good, line('a', 'Label: a'));
    const v = await runCli(['finetune', '--model', STORIES, '--data', good, '--validation', data, '--out', out]);
    expect(v.code).toBe(1);
    expect(v.stderr).toContain(`--validation ${data} has 3 bad line(s)`);
    expect(existsSync(out)).toBe(false);
  }, 60_000);

  it('names a bad option value and what it takes', async () => {
    const dir = tmp();
    const data = join(dir, 'train.jsonl');
    writeFileSync(data, line('a', 'Label: a'));
    const out = join(dir, 'a.gguf');
    const cases: [string[], RegExp][] = [
      [['--targets', 'q,x'], /--targets must be a comma-separated list of q, k, v, o, gate, up, down \("x" is not one\)/],
      [['--lr', '0'], /--lr must be a number from 1e-9 to 1/],
      [['--rank', 'eight'], /--rank must be an integer ≥ 1 and ≤ 1024/],
      [['--epochs', '0'], /--epochs must be an integer ≥ 1/],
      [['--batch', '1.5'], /--batch must be an integer/],
      [['--adapter', 'cuda'], /--adapter must be one of auto, gpu, swiftshader, llvmpipe/],
      [['--resume'], /--resume needs --checkpoint-dir/],
      [['--resume', '--checkpoint-dir', dir], /--resume: there is no checkpoint at .*finetune\.ckpt/],
    ];
    for (const [args, message] of cases) {
      const r = await runCli(['finetune', '--model', STORIES, '--data', data, '--out', out, ...args]);
      expect(r.code, args.join(' ')).toBe(1);
      expect(r.stderr, args.join(' ')).toMatch(message);
      expect(r.stderr).not.toContain('loading weights');
    }
    const missing = await runCli(['finetune', '--model', STORIES, '--data', join(dir, 'nope.jsonl'), '--out', out]);
    expect(missing.stderr).toMatch(/--data: cannot read .*nope\.jsonl \(ENOENT\)/);
    const noFolder = await runCli(['finetune', '--model', STORIES, '--data', data, '--out', join(dir, 'no', 'a.gguf')]);
    expect(noFolder.stderr).toMatch(/--out: the folder .*no does not exist/);
    const noData = await runCli(['finetune', '--model', STORIES, '--out', out]);
    expect(noData.stderr).toMatch(/required option '-d, --data <train.jsonl>' not specified/);
  }, 120_000);
});

describe('svc finetune refuses conversations the model cannot take', () => {
  it('names, by line, a conversation longer than --max-tokens once rendered, before any step', async () => {
    const dir = tmp();
    const data = join(dir, 'train.jsonl');
    writeFileSync(data, [line('The cat sat.', 'Label: cat'), line('The dog ran to the park and then home and then to the park again.', 'Label: dog'), line('A bird.', 'Label: bird')].join('\n'));
    const r = await runCli(['finetune', '--model', STORIES, '--data', data, '--out', join(dir, 'a.gguf'), '--max-tokens', '50']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`--data ${data} has 1 conversation\\(s\\) that cannot be trained on; nothing was trained:\\nline 2: the rendered conversation is \\d+ tokens, more than the 50 allowed`));
    expect(r.stderr).not.toContain('training ');
    expect(readdirSync(dir)).toEqual(['train.jsonl']);
  }, 60_000);
});

describe('svc finetune trains', () => {
  it('writes an adapter the GGUF parser reads as a LoRA adapter, prints a summary, and resumes from its checkpoint', async () => {
    const dir = tmp();
    const data = join(dir, 'train.jsonl');
    const lines = readFileSync(new URL('../fixtures/finetune/label-train.jsonl', import.meta.url), 'utf8').split('\n').slice(0, 8);
    writeFileSync(data, lines.join('\n') + '\n');
    const validation = new URL('../fixtures/finetune/label-heldout.jsonl', import.meta.url).pathname;
    const out = join(dir, 'label.gguf');
    const args = ['finetune', '--model', STORIES, '--data', data, '--validation', validation, '--out', out, '--epochs', '1', '--batch', '4', '--rank', '4', '--alpha', '8', '--targets', 'q,v', '--lr', '3e-3', '--checkpoint-dir', join(dir, 'ckpt')];
    const r = await runCli(args);
    expect(r.stderr).toContain('training q,v at rank 4 on 8 conversations (16 for validation): 1 epoch(s) of 2 step(s)');
    expect(r.code).toBe(0);
    // Not a terminal: plain progress lines, and the validation loss after the epoch.
    expect(r.stderr).toMatch(/^step 1\/2  epoch 1  loss \d+\.\d{4}  \d+ tok\/s  \d+:\d\d left/m);
    expect(r.stderr).toMatch(/^step 2\/2  epoch 1  loss /m);
    expect(r.stderr).toMatch(/^epoch 1\/1: train loss \d+\.\d{4}, validation loss \d+\.\d{4}$/m);
    const summary = JSON.parse(r.stdout) as { adapter: string; steps: number; firstLoss: number; validationLoss: number[]; wallMs: number };
    expect(summary).toMatchObject({ adapter: out, steps: 2 });
    expect(summary.validationLoss).toHaveLength(1);
    expect(readdirSync(dir).sort()).toEqual(['ckpt', 'label.gguf', 'train.jsonl']);
    expect(readdirSync(join(dir, 'ckpt'))).toEqual(['finetune.ckpt']);

    const bytes = new Uint8Array(readFileSync(out));
    const gguf = await parseGguf(new BytesSource(bytes, out));
    expect(gguf.metadata.string('general.type')).toBe('adapter');
    expect(gguf.metadata.string('adapter.type')).toBe('lora');
    expect(gguf.metadata.number('adapter.lora.alpha')).toBe(8);
    expect(gguf.metadata.string('general.architecture')).toBe('llama');
    const expected = [0, 1, 2, 3, 4].flatMap((l) => (['q', 'v'] as const).flatMap((t) => [loraTensorName(l, t, 'a'), loraTensorName(l, t, 'b')]));
    expect(gguf.tensors.map((t) => t.name).sort()).toEqual(expected.sort());
    // stories260K: dim 64, 8 heads of 8, 4 KV heads → v maps 64 → 32; A is [in, rank], B is [rank, out] in GGML order.
    expect(gguf.tensors.find((t) => t.name === loraTensorName(0, 'v', 'a'))!.dims).toEqual([64, 4]);
    expect(gguf.tensors.find((t) => t.name === loraTensorName(0, 'v', 'b'))!.dims).toEqual([4, 32]);

    // The checkpoint holds the finished run: resuming it trains nothing more and writes the same adapter.
    const again = await runCli([...args, '--resume']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ steps: 2, validationLoss: summary.validationLoss });
    expect(Buffer.from(readFileSync(out)).equals(Buffer.from(bytes))).toBe(true);
    // With other settings it is refused, naming the difference.
    const other = await runCli([...args.map((a) => (a === '3e-3' ? '1e-3' : a)), '--resume']);
    expect(other.code).toBe(1);
    expect(other.stderr).toContain('the checkpoint was made with learningRate 0.003, not 0.001');
  }, 180_000);
});

describe('svc finetune stopped with Ctrl-C', () => {
  it('saves a checkpoint and exits 130; --resume then ends with the adapter an unbroken run writes', async () => {
    const dir = tmp();
    const data = join(dir, 'train.jsonl');
    const lines = readFileSync(new URL('../fixtures/finetune/label-train.jsonl', import.meta.url), 'utf8').split('\n').slice(0, 8);
    writeFileSync(data, lines.join('\n') + '\n');
    const args = (out: string, ckpt: string) => ['finetune', '--model', STORIES, '--data', data, '--out', join(dir, out), '--epochs', '2', '--batch', '2', '--rank', '4', '--targets', 'q,v', '--lr', '3e-3', '--checkpoint-dir', join(dir, ckpt), '--checkpoint-every', '100'];
    const unbroken = await runCli(args('unbroken.gguf', 'a'));
    expect(unbroken.code).toBe(0);

    // Interrupted once step 3 of 8 is reported: the loop finishes the step it is in, saves, and stops.
    const child = spawn(process.execPath, [BIN, ...args('resumed.gguf', 'b')], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr += d;
      if (/^step 3\/8/m.test(stderr) && !child.killed) child.kill('SIGINT');
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(code).toBe(130);
    expect(stderr).toMatch(new RegExp(`fine-tuning was aborted after [34] step\\(s\\); --resume --checkpoint-dir ${join(dir, 'b')} continues from there`));
    expect(existsSync(join(dir, 'resumed.gguf'))).toBe(false);
    expect(existsSync(join(dir, 'b', 'finetune.ckpt'))).toBe(true);

    const resumed = await runCli([...args('resumed.gguf', 'b'), '--resume']);
    expect(resumed.code).toBe(0);
    expect(resumed.stderr).not.toMatch(/^step [123]\/8/m);
    expect(JSON.parse(resumed.stdout).validationLoss).toEqual(JSON.parse(unbroken.stdout).validationLoss);
    expect(readFileSync(join(dir, 'resumed.gguf')).equals(readFileSync(join(dir, 'unbroken.gguf')))).toBe(true);
  }, 180_000);
});
