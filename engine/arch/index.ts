import type { GgufMetadata } from '../gguf/parse.ts';
import { gemma } from './gemma.ts';
import { llama } from './llama.ts';
import { phi3 } from './phi3.ts';
import { qwen2 } from './qwen2.ts';
import { qwen3 } from './qwen3.ts';
import type { Architecture, ModelConfig } from './types.ts';

/** Architectures the engine runs; each entry is a file of differences from llama. */
const ARCHITECTURES: Record<string, Architecture> = { llama, qwen2, qwen3, phi3, gemma };

export const SUPPORTED_ARCHITECTURES = Object.keys(ARCHITECTURES);

export function readModelConfig(meta: GgufMetadata, tensorNames: ReadonlySet<string>): ModelConfig {
  const name = meta.string('general.architecture');
  const arch = ARCHITECTURES[name];
  if (!arch) throw new Error(`model architecture "${name}" is not supported (supported: ${SUPPORTED_ARCHITECTURES.join(', ')})`);
  return arch.config(meta, tensorNames);
}
