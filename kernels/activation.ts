/** Gate activations of gated FFNs, as WGSL defining `fn act(g: f32) -> f32`, shared by every kernel that applies one. */
import gelu from './activation-gelu.wgsl?raw';
import silu from './activation-silu.wgsl?raw';

export type Activation = 'silu' | 'gelu';

export function activationWgsl(a: Activation): string {
  return a === 'gelu' ? gelu : silu;
}
