/** Shapes and metadata of real models, for synthesizing same-sized GGUF files with random weights. */

export interface RopeLlama3Scaling {
  factor: number;
  lowFreqFactor: number;
  highFreqFactor: number;
  originalContextLength: number;
}

/** Architectures the synthesizer writes: llama.cpp's `general.architecture` names. */
export type SynthArchitecture = 'llama' | 'qwen2' | 'qwen3' | 'phi3' | 'gemma';

/**
 * How random weights are drawn. The default (std 0.02 everywhere, norms exactly 1) keeps activations
 * finite at any depth, which is what a speed benchmark needs; parity tests want larger weights so the
 * logits are well separated and a greedy choice does not hinge on rounding.
 */
export interface SynthInit {
  /** Std of the block matrices (default WEIGHT_STD). */
  matrixStd?: number;
  /** Std of token_embd.weight (default matrixStd). */
  embeddingStd?: number;
  /** Std of output.weight when untied (default matrixStd). */
  outputStd?: number;
  /** Std of projection biases (default matrixStd). */
  biasStd?: number;
  /** Norm weights are 1 + N(0, normJitter) (default 0: exactly 1). */
  normJitter?: number;
}

export interface ModelPreset {
  /** What the real model is called (goes into general.name with a "synthetic" note). */
  displayName: string;
  /** Default llama. The others differ in tensors and metadata as llama.cpp's converter writes them. */
  architecture?: SynthArchitecture;
  layers: number;
  dim: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  ffn: number;
  vocab: number;
  contextLength: number;
  ropeBase: number;
  rmsEps: number;
  tiedEmbeddings: boolean;
  /** Llama 3.x long-context RoPE: real files carry it as the `rope_freqs.weight` tensor, and so do ours. */
  ropeScaling?: RopeLlama3Scaling;
  /** Rotated dimensions per head when fewer than headDim (partial rotary, Phi-4-mini). */
  ropeDims?: number;
  init?: SynthInit;
  tokenizer: {
    /** llama.cpp's pre-tokenizer name (tokenizer.ggml.pre); it must be one llama.cpp knows. */
    pre: string;
    /** Control tokens, in id order, placed before (start) or after (end) the byte-level vocabulary. */
    specials: readonly string[];
    specialsAt: 'start' | 'end';
    bos: string;
    eos: string;
    pad?: string;
    addBos: boolean;
    chatTemplate?: string;
  };
}

const CHATML =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}" +
  "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const LLAMA3_CHAT =
  "{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{%- endfor %}" +
  "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}";

const SMOLLM2_SPECIALS = [
  '<|endoftext|>', '<|im_start|>', '<|im_end|>', '<repo_name>', '<reponame>', '<file_sep>', '<filename>', '<gh_stars>', '<issue_start>',
  '<issue_comment>', '<issue_closed>', '<jupyter_start>', '<jupyter_text>', '<jupyter_code>', '<jupyter_output>', '<jupyter_script>', '<empty_output>',
];

/** Llama 3's 256 special tokens at ids 128000..128255; the unnamed ones are reserved. */
function llama3Specials(): string[] {
  const named: Record<number, string> = {
    0: '<|begin_of_text|>', 1: '<|end_of_text|>', 4: '<|finetune_right_pad_id|>', 6: '<|start_header_id|>', 7: '<|end_header_id|>', 8: '<|eom_id|>', 9: '<|eot_id|>', 10: '<|python_tag|>',
  };
  let reserved = 0;
  return Array.from({ length: 256 }, (_, i) => named[i] ?? `<|reserved_special_token_${reserved++}|>`);
}

const QWEN_CHATML =
  "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n' }}{% endif %}" +
  "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

const PHI3_CHAT =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\n' + message['content'] + '<|end|>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\n' }}{% endif %}";

const GEMMA_CHAT =
  "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}" +
  "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}";

const QWEN_TOKENIZER = {
  pre: 'qwen2',
  specials: ['<|endoftext|>', '<|im_start|>', '<|im_end|>'],
  specialsAt: 'end',
  bos: '<|endoftext|>',
  eos: '<|im_end|>',
  pad: '<|endoftext|>',
  addBos: false,
  chatTemplate: QWEN_CHATML,
} as const;

export const PRESETS = {
  /** A few-hundred-KB model for tests: the smollm2 layout scaled down. */
  tiny: {
    displayName: 'Tiny test model',
    layers: 2,
    dim: 64,
    heads: 4,
    kvHeads: 2,
    headDim: 16,
    ffn: 128,
    vocab: 512,
    contextLength: 256,
    ropeBase: 10000,
    rmsEps: 1e-5,
    tiedEmbeddings: true,
    tokenizer: { pre: 'smollm', specials: SMOLLM2_SPECIALS.slice(0, 3), specialsAt: 'start', bos: '<|im_start|>', eos: '<|im_end|>', pad: '<|im_end|>', addBos: false, chatTemplate: CHATML },
  },
  'smollm2-135m': {
    displayName: 'SmolLM2 135M',
    layers: 30,
    dim: 576,
    heads: 9,
    kvHeads: 3,
    headDim: 64,
    ffn: 1536,
    vocab: 49152,
    contextLength: 8192,
    ropeBase: 100000,
    rmsEps: 1e-5,
    tiedEmbeddings: true,
    tokenizer: { pre: 'smollm', specials: SMOLLM2_SPECIALS, specialsAt: 'start', bos: '<|im_start|>', eos: '<|im_end|>', pad: '<|im_end|>', addBos: false, chatTemplate: CHATML },
  },
  'llama-3.2-1b': {
    displayName: 'Llama 3.2 1B',
    layers: 16,
    dim: 2048,
    heads: 32,
    kvHeads: 8,
    headDim: 64,
    ffn: 8192,
    vocab: 128256,
    contextLength: 131072,
    ropeBase: 500000,
    rmsEps: 1e-5,
    tiedEmbeddings: true,
    ropeScaling: { factor: 32, lowFreqFactor: 1, highFreqFactor: 4, originalContextLength: 8192 },
    tokenizer: { pre: 'llama-bpe', specials: llama3Specials(), specialsAt: 'end', bos: '<|begin_of_text|>', eos: '<|eot_id|>', addBos: true, chatTemplate: LLAMA3_CHAT },
  },
  // Test-sized models of the other architectures: the metadata keys, tensor names and tokenizer settings
  // of the model named, at the tiny model's size, each keeping its model's peculiarities.
  /** Qwen2.5-7B's layout (untied output, Q/K/V biases). */
  'qwen2-tiny': {
    displayName: 'Qwen2.5 (tiny test shape)',
    architecture: 'qwen2',
    layers: 2,
    dim: 64,
    heads: 4,
    kvHeads: 2,
    headDim: 16,
    ffn: 128,
    vocab: 512,
    contextLength: 512,
    ropeBase: 1000000,
    rmsEps: 1e-6,
    tiedEmbeddings: false,
    tokenizer: QWEN_TOKENIZER,
  },
  /** Qwen3-0.6B's layout: heads wider than dim / heads (4 × 32 on dim 64, as 16 × 128 on 1024), Q/K norms, tied. */
  'qwen3-tiny': {
    displayName: 'Qwen3 (tiny test shape)',
    architecture: 'qwen3',
    layers: 2,
    dim: 64,
    heads: 4,
    kvHeads: 2,
    headDim: 32,
    ffn: 128,
    vocab: 512,
    contextLength: 512,
    ropeBase: 1000000,
    rmsEps: 1e-6,
    tiedEmbeddings: true,
    tokenizer: QWEN_TOKENIZER,
  },
  /**
   * Phi-4-mini's layout: fused attn_qkv and gate|up, partial rotary (3/4 of each head), tied. Its
   * tokenizer's pre-tokenizer ('gpt-4o') is not one ours knows yet, so this vocabulary says 'gpt-2'.
   */
  'phi3-tiny': {
    displayName: 'Phi-4-mini (tiny test shape)',
    architecture: 'phi3',
    layers: 2,
    dim: 64,
    heads: 4,
    kvHeads: 2,
    headDim: 16,
    ropeDims: 12,
    ffn: 128,
    vocab: 512,
    contextLength: 512,
    ropeBase: 10000,
    rmsEps: 1e-5,
    tiedEmbeddings: true,
    tokenizer: {
      pre: 'gpt-2',
      specials: ['<|endoftext|>', '<|assistant|>', '<|end|>', '<|user|>', '<|system|>'],
      specialsAt: 'end',
      bos: '<|endoftext|>',
      eos: '<|end|>',
      pad: '<|endoftext|>',
      addBos: false,
      chatTemplate: PHI3_CHAT,
    },
  },
  /**
   * Gemma-2B's layout: one KV head, heads wider than dim / heads (32 on dim 64, as 256 on 2048), tied.
   * Gemma's vocabulary is SentencePiece; the synthesizer writes byte-level BPE, with Gemma's specials.
   */
  'gemma-tiny': {
    displayName: 'Gemma (tiny test shape)',
    architecture: 'gemma',
    layers: 2,
    dim: 64,
    heads: 4,
    kvHeads: 1,
    headDim: 32,
    ffn: 128,
    vocab: 512,
    contextLength: 512,
    ropeBase: 10000,
    rmsEps: 1e-6,
    tiedEmbeddings: true,
    tokenizer: {
      pre: 'default',
      specials: ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>'],
      specialsAt: 'start',
      bos: '<bos>',
      eos: '<eos>',
      pad: '<pad>',
      addBos: true,
      chatTemplate: GEMMA_CHAT,
    },
  },
} satisfies Record<string, ModelPreset>;

export type PresetName = keyof typeof PRESETS;

export function preset(name: string): ModelPreset {
  const p = (PRESETS as Record<string, ModelPreset>)[name];
  if (!p) throw new Error(`unknown preset "${name}" (have: ${Object.keys(PRESETS).join(', ')})`);
  return p;
}
