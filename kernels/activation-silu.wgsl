// SiLU, the gate activation of SwiGLU (llama, qwen, phi3).
fn act(g: f32) -> f32 {
  return g / (1.0 + exp(-g));
}
