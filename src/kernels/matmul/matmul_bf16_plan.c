// The AMX order's plan (matmul_isa.h, gm_bf16_amx_plan) from oneDNN 3.13's K blocking
// (onednn_amx.h): its calls' K chunk, the threads' parts of K and the K tail's own call, in pairs.
// Data only: nothing here computes a product.
#include "kernels/matmul/matmul_isa.h"
#include "kernels/matmul/onednn_amx.h"

bool gm_bf16_amx_plan_for(int M, int N, int K, bool trans_a, bool trans_b, bool with_sum, int threads, gm_bf16_amx_plan *out) {
  const int P = (K + 1) / 2;
  gm_amx_blocking b;
  out->chunk = 0;
  out->n_seg = 1;
  out->tail = false;
  out->start[0] = 0;
  out->start[1] = P;
  if (gm_onednn_amx_blocking(M, N, K, trans_a, trans_b, with_sum, threads > 0 ? threads : 1, &b) != 0) return false;
  out->chunk = b.chunk / 2; // a multiple of 32 elements: whole pairs
  for (int t = 1; t < b.n_parts; t++) out->start[t] = b.part_start[t] / 2;
  out->n_seg = b.n_parts;
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
