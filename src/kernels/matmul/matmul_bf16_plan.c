// The AMX order's plan (matmul_isa.h, gm_bf16_amx_plan) from oneDNN 3.13's K blocking
// (onednn_amx.h): its calls' K chunk, the threads' parts of K and the K tail's own call, in pairs.
// Data only: nothing here computes a product.
#include "kernels/matmul/matmul_isa.h"
#include "kernels/matmul/onednn_amx.h"

bool gm_bf16_amx_plan_for(int M, int N, int K, bool trans_a, bool trans_b, bool with_sum, int threads, int batch,
                          gm_bf16_amx_plan *out) {
  const int P = (K + 1) / 2;
  gm_amx_blocking b;
  out->chunk = 0;
  out->n_seg = 1;
  out->tail = false;
  out->not_amx = false;
  out->start[0] = 0;
  out->start[1] = P;
  for (int t = 0; t < GM_BF16_AMX_MAX_SEGS; t++) out->tile[t] = 16;
  const int rc = gm_onednn_amx_blocking(M, N, K, trans_a, trans_b, with_sum, threads > 0 ? threads : 1, batch, &b);
  if (rc != 0) {
    out->not_amx = rc == GM_AMX_NOT_AMX;
    return false;
  }
  out->chunk = b.chunk / 2; // a multiple of 32 elements (or of the tile): whole pairs
  for (int t = 1; t < b.n_parts; t++) out->start[t] = b.part_start[t] / 2;
  out->n_seg = b.n_parts;
  for (int t = 0; t < out->n_seg; t++) out->tile[t] = b.tile / 2;
  if (b.last_tile != b.tile && b.chunk > 0 && K % b.chunk != 0) {
    // the last call (K % chunk elements) in tiles of its own: a segment of its own, joined to the
    // part before it like the K tail's call (the same sum: the calls before it, then it)
    const int last = (K - K % b.chunk) / 2;
    if (last > out->start[out->n_seg - 1]) {
      out->start[out->n_seg] = last;
      out->tile[out->n_seg++] = b.last_tile / 2;
      out->tail = true;
    } else out->tile[out->n_seg - 1] = b.last_tile / 2; // (a part of that call alone)
  } else if (b.chunk == 0) out->tile[0] = b.last_tile / 2;
  // the tail's own call: the partial tile from K - K % 32, inside the last part (when that part
  // holds full tiles too; a part of the tail alone is just a part)
  const int full = K / 32 * 16;
  if (b.tail && full > out->start[out->n_seg - 1] && full < P) {
    out->start[out->n_seg++] = full;
    out->tail = true;
  }
  out->start[out->n_seg] = P;
  return true;
}
