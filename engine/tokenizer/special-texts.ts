/**
 * Token texts by which llama.cpp recognises special tokens when GGUF metadata does not name them
 * (llama_vocab::impl::load). Kept as data so a new model family is a one-line change.
 */

/** Candidates for the end-of-turn token when tokenizer.ggml.eot_token_id is absent. */
export const EOT_TEXTS = [
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<end_of_turn>', '<|endoftext|>', '<|end_of_text|>',
  '<EOT>', '_<EOT>', '[EOT]', '<｜end▁of▁sentence｜>', '<end_of_utterance>',
];

export const EOM_TEXTS = ['<|eom_id|>'];

export const FIM_TEXTS = {
  pre: ['<|fim_prefix|>', '<fim-prefix>', '<fim_prefix>', '<｜fim▁begin｜>', '<PRE>', '▁<PRE>', '<|code_prefix|>', '<|prefix|>'],
  suf: ['<|fim_suffix|>', '<fim-suffix>', '<fim_suffix>', '<｜fim▁hole｜>', '<SUF>', '▁<SUF>', '<|code_suffix|>', '<|suffix|>'],
  mid: ['<|fim_middle|>', '<fim-middle>', '<fim_middle>', '<｜fim▁end｜>', '<MID>', '▁<MID>', '<|code_middle|>', '<|middle|>'],
  pad: ['<|fim_pad|>', '<fim-pad>', '<fim_pad>', '<PAD>', '[PAD]'],
  rep: ['<|fim_repo|>', '<|repo_name|>', '<fim-repo>', '<REPO>', '<reponame>'],
  sep: ['<|file_sep|>'],
} as const;

/** Every token with one of these texts ends generation (and is forced to be a control token). */
export const EOG_TEXTS = new Set([
  '<|eot_id|>', '<|im_end|>', '<|end|>', '<|return|>', '<|call|>', '<|flush|>', '<|calls|>',
  '<end_of_turn>', '<|endoftext|>', '</s>', '<|eom_id|>', '<EOT>', '_<EOT>', '[EOT]', '[EOS]',
  '<|end_of_text|>', '<end_of_utterance>', '<eos>', '<turn|>', '<|tool_response>',
  '<｜end▁of▁sentence｜>', '[e~[',
]);

/** gpt-oss chat markup that llama.cpp always renders, whatever the GGUF says. */
export const ALWAYS_RENDERED_TEXTS = new Set(['<|channel|>', '<|message|>', '<|start|>', '<|constrain|>']);
