/** LoRA training on the engine's GPU: see trainer.ts for the design. */
export { createLoraTrainer, type LoraTrainerOptions } from './trainer.ts';
