// Where the attention kernels (and the KV mirror's gather, kv-mirror.wgsl, and the RoPE/KV-store pass) find a position's KV row: the
// paged cache, through the sequence's row of the page table (binding 3). Row r = page * page_size + slot of the layer's K and V buffers holds every
// KV head of one position.
@group(0) @binding(3) var<storage, read> page_table: array<u32>;

fn kv_row(seq: u32, p: u32) -> u32 {
  return page_table[seq * params.max_pages + p / params.page_size] * params.page_size + p % params.page_size;
}
