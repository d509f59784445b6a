/** `svc tokenize`: the token ids of a text, as llama.cpp would produce them, as one JSON line. */
import type { Command } from 'commander';
import { parseGguf } from '../../engine/gguf/parse.ts';
import { FileSource } from '../../engine/loader/file-source.ts';
import { createTokenizer } from '../../engine/tokenizer/index.ts';

export function registerTokenize(program: Command): void {
  program
    .command('tokenize')
    .description('print the token ids of <text> as a JSON array on one line')
    .argument('<text>', 'text to tokenize')
    .requiredOption('-m, --model <path>', 'GGUF model file (only its vocabulary is read)')
    .option('--no-bos', 'do not add the BOS token even if the model asks for it')
    .option('--special', 'parse control-token text such as <|eot_id|> into those tokens')
    .action(async (text: string, o: { model: string; bos: boolean; special?: boolean }) => {
      const source = new FileSource(o.model);
      try {
        const gguf = await parseGguf(source);
        const tokenizer = createTokenizer(gguf.metadata);
        const ids = tokenizer.encode(text, { addBos: o.bos ? undefined : false, parseSpecial: o.special ?? false });
        process.stdout.write(JSON.stringify(ids) + '\n');
      } finally {
        await source.close();
      }
    });
}
