// Lets Node run the TypeScript sources directly: tsx for .ts, our hook for `?raw` WGSL imports.
import { register } from 'node:module';
import { register as registerTsx } from 'tsx/esm/api';

registerTsx();
register('./wgsl-hook.mjs', import.meta.url);
