// Grammar-constrained decoding: whether token i is allowed in a row (needs the kernel's `mask` binding).

fn allowed(mask_row: u32, mask_words: u32, use_mask: u32, i: u32) -> bool {
  if (use_mask == 0u) { return true; }
  return ((mask[mask_row * mask_words + (i >> 5u)] >> (i & 31u)) & 1u) != 0u;
}
