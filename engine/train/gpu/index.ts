/** LoRA training on the engine's GPU: see trainer.ts for the design. */
export { createLoraTrainer, type LoraTrainerOptions, type LoraTrainerDiagnostics } from './trainer.ts';
