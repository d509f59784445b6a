/** Headless Chromium for the browser tests: Debian's chromium with software WebGPU, and pages that collect their errors. */
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.SVC_CHROMIUM ?? '/usr/bin/chromium';
/** Screenshots go here (gitignored); look at them after a run. */
export const ARTIFACTS = join(process.cwd(), 'test-artifacts');

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, args: ['--enable-unsafe-webgpu', '--disable-gpu', '--disable-quic'] });
}

/** A new page at `url`, its uncaught errors pushed to `errors`; waits for `readyFunction` on window when given. */
export async function openPage(owner: Browser | BrowserContext, url: string, errors: string[], readyFunction?: string): Promise<Page> {
  const page = await owner.newPage();
  page.on('pageerror', (e) => errors.push(e.message));
  await page.goto(url);
  if (readyFunction) await page.waitForFunction((name) => typeof (window as unknown as Record<string, unknown>)[name] === 'function', readyFunction);
  return page;
}
