/**
 * The playground page in headless Chromium, both ways it runs: served by the Node server at `/` (server
 * mode: the visitor gives a key), and as the static site `svc web build` writes, served by a plain static
 * file server, with the whole service in the browser (browser mode: a real progress bar while the model
 * loads). A chat completes and streams, with TTFT, tokens per second, the raw exchange and usage shown.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { StaticAssets } from '../../adapters/http/static-assets.ts';
import { buildPlayground } from '../../build/playground.ts';
import { buildWebSite } from '../../build/web-site.ts';
import { ARTIFACTS, launchChromium, openPage } from '../helpers/browser.ts';
import { testEngine } from '../helpers/engine.ts';
import { sharedModel } from '../helpers/models.ts';
import { serveStatic, type StaticServer } from '../helpers/static-server.ts';
import { startServer, type Harness } from '../http/helpers/harness.ts';


let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
});

async function openPlayground(url: string): Promise<{ page: Page; errors: string[] }> {
  const errors: string[] = [];
  const page = await openPage(browser, url, errors);
  await page.setViewportSize({ width: 1280, height: 800 });
  return { page, errors };
}

/** A greedy story from the chat specialist, short. */
async function storyChat(page: Page): Promise<{ answer: string; stats: string }> {
  await page.getByTestId('specialist').selectOption('chat');
  await page.getByTestId('temperature').fill('0');
  await page.getByTestId('max-tokens').fill('24');
  return chat(page, 'Once upon a time');
}

/** Sends a message and waits for the answer's stats line. */
async function chat(page: Page, text: string): Promise<{ answer: string; stats: string }> {
  await page.getByTestId('prompt').fill(text);
  await page.getByTestId('send').click();
  await expect.poll(() => page.getByTestId('stats').textContent(), { timeout: 60_000 }).toMatch(/TTFT \d+ ms/);
  const answer = (await page.locator('#messages li.assistant').last().evaluate((li) => li.firstChild?.textContent ?? '')) as string;
  return { answer, stats: (await page.getByTestId('stats').textContent())! };
}

describe('the playground served by svc serve (server mode)', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startServer({ engine: () => testEngine(), ui: new StaticAssets((await buildPlayground({ mode: 'server' })).files) });
  });
  afterAll(() => h?.close());

  it('asks for a key, refuses a wrong one with the API’s message, and completes a streamed chat', async () => {
    const key = h.key('scale', { paid: true });
    const { page, errors } = await openPlayground(h.url + '/');
    const res = await page.request.get(h.url + '/');
    expect(res.headers()['content-security-policy']).toContain("default-src 'self'");
    expect(await page.getByTestId('mode').textContent()).toBe('server');
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('Enter your API key');

    await page.getByTestId('key').fill('svc_live_wrongwrongwrongwrongwrongwrong12');
    await page.locator('#save-key').click();
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('401');
    await expect.poll(() => page.getByTestId('error').textContent()).toContain('Incorrect API key');

    await page.getByTestId('key').fill(key);
    await page.locator('#save-key').click();
    await expect.poll(() => page.getByTestId('specialist').locator('option').count()).toBe(6);
    const { answer, stats } = await storyChat(page);
    expect(answer.length).toBeGreaterThan(5);
    expect(stats).toMatch(/TTFT \d+ ms · [\d.]+ tok\/s · \d+ tokens · (length|stop)/);
    await page.getByTestId('raw').locator('summary').click();
    expect(await page.getByTestId('raw-request').textContent()).toContain('"model": "svc-chat"');
    expect(await page.getByTestId('raw-response').textContent()).toContain('data: [DONE]');
    await expect.poll(() => page.getByTestId('usage').textContent()).toMatch(/^1 of 2000000 requests/);
    // The key survives a reload (localStorage only), and the classify specialist shows its labels field.
    await page.reload();
    await expect.poll(() => page.getByTestId('specialist').locator('option').count()).toBe(6);
    await page.getByTestId('specialist').selectOption('classify');
    expect(await page.getByTestId('labels').isVisible()).toBe(true);
    expect(await page.getByTestId('context').isVisible()).toBe(false);
    await page.getByTestId('labels').fill('happy, sad');
    const labelled = await chat(page, 'The sun was warm and Lily smiled.');
    expect(['happy', 'sad']).toContain(labelled.answer);
    await page.screenshot({ path: join(ARTIFACTS, 'playground-server.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);

  it('is not served with --no-ui: / is the API’s 404', async () => {
    const bare = await startServer({});
    try {
      const res = await fetch(bare.url + '/');
      expect(res.status).toBe(404);
      expect((await res.json()).error.code).toBe('unknown_url');
    } finally {
      await bare.close();
    }
  });
});

describe('the playground as a static site (browser mode)', () => {
  let dir: string;
  let site: StaticServer;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-playground-site-'));
    await buildWebSite({ out: dir, model: sharedModel('stories260K.gguf') });
    site = await serveStatic(dir);
  }, 120_000);
  afterAll(async () => {
    await site?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('loads the model in the browser with a progress bar and completes a chat with no server-side inference', async () => {
    const { page, errors } = await openPlayground(site.url + '/');
    expect(await page.getByTestId('mode').textContent()).toBe('in this browser');
    await expect.poll(() => page.getByTestId('load-text').textContent(), { timeout: 60_000 }).toMatch(/^ready/);
    expect(await page.getByTestId('load-progress').evaluate((p) => (p as HTMLProgressElement).value)).toBe(1);
    await expect.poll(() => page.getByTestId('specialist').locator('option').count()).toBe(6);
    const { answer, stats } = await storyChat(page);
    expect(answer.length).toBeGreaterThan(5);
    expect(stats).toMatch(/tok\/s/);
    await expect.poll(() => page.getByTestId('usage').textContent()).toMatch(/^1 of \d+ requests/);
    await page.getByTestId('raw').locator('summary').click();
    expect(await page.getByTestId('raw-response').textContent()).toContain('text/event-stream');
    await page.screenshot({ path: join(ARTIFACTS, 'playground-browser.png'), fullPage: true });
    expect(errors).toEqual([]);
    await page.close();
  }, 120_000);
});
