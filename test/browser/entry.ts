// Bundled by the browser test: exposes one function the page calls to run the engine greedily.
import { loadBrowserEngine } from '../../engine/browser.ts';

declare global {
  interface Window {
    svcGreedy(url: string, tokens: number[], maxTokens: number): Promise<{ tokens: number[]; text: string; adapter: string; software: boolean }>;
  }
}

window.svcGreedy = async (url, tokens, maxTokens) => {
  const engine = await loadBrowserEngine({ model: url });
  try {
    const r = await engine.generate({ tokens, maxTokens, temperature: 0, stopAtEndOfGeneration: false }).result;
    return { tokens: r.tokens, text: r.text, adapter: engine.device.adapterInfo.description || engine.device.adapterInfo.vendor, software: engine.device.caps.software };
  } finally {
    await engine.dispose();
  }
};
