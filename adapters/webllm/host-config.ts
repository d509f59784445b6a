/** Where a host script finds svc-web.json: its `?config=` query (relative to the script), else beside it. */
import { WEB_CONFIG_FILE } from '../service-worker/web-config.ts';

export function webConfigFromScriptUrl(scriptUrl: string): string {
  const url = new URL(scriptUrl);
  return new URL(url.searchParams.get('config') ?? WEB_CONFIG_FILE, url).href;
}
