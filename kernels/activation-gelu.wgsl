// The tanh approximation of GELU, the gate activation of GeGLU (gemma). As ggml_gelu: beyond |x| = 10
// the result is x or 0 (and tanh of a huge argument is never evaluated).
fn act(g: f32) -> f32 {
  if (g <= -10.0) { return 0.0; }
  if (g >= 10.0) { return g; }
  return 0.5 * g * (1.0 + tanh(0.7978845608028654 * g * (1.0 + 0.044715 * g * g)));
}
