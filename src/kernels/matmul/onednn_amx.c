// gm_onednn_amx_blocking (onednn_amx.h): which heuristic oneDNN 3.13's brgemm matmul runs for one
// of torch's bf16 products, the "micro" heuristic, and the chunk / tail / K split that follow.
// A port of tools/ref/onednn_amx_blocking.py (functions blocking, micro_find_best, class Micro,
// chunk_and_split, block_starts), which follows oneDNN's
//   brgemm_matmul_utils.cpp: init_brgemm_matmul_conf (A copied when given transposed, B always
//     copied to VNNI blocks), compute_blocking_heuristic (AMX: the macro heuristic for a plain A,
//     the micro one when a transposed A rules the macro out or every macro blocking scores 0);
//   amx_blocking_heuristics.cpp: matmul_amx_blocking_params_micro_t (find_best_blocking,
//     set_blocking_parameters, calculate_chunk_memory_size and its three scores: L2 fill, reuse
//     of the copied data, thread balance);
//   brgemm_matmul.cpp: the K chunks shared by balance211 between the nthr_k threads, one brgemm
//     call per K_blk * batch elements and a call of its own for the K tail.
// Decision contract: the micro search keeps the first blocking with a strictly higher score, its
// candidates visited in oneDNN's order; scores in binary32 in oneDNN's order (keep the order of
// every float expression). The sum post-op (with_sum) changes nothing in the choice.
#include "kernels/matmul/onednn_amx.h"

#include <math.h>
#include <stdint.h>

enum {
  L2_THRESHOLD = 3 * GM_AMX_L2 / 4,
  DT = 2,  // bytes of bf16 (A, B and C)
  ACC = 4, // bytes of the f32 accumulator
  MAX_M_CANDIDATES = 16
};

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t rnd_up(int64_t a, int64_t b) { return div_up(a, b) * b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static bool is_pow2(int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

typedef struct {
  int64_t M, N, K, nthr, batch; // batch: slices of a 3-D product
  bool copy_a;      // A given transposed: copied to a buffer
  bool lda_pow2;    // a plain A with a large power-of-2 row stride
  int64_t nthr_k, nthr_mnb;
  int64_t k_blk, bs, k_chunk, m_blk, n_blk, m_chunk, n_chunk;
  int64_t m_elems, n_elems, k_elems; // per chunk
  bool need_buf_a, need_buf_c, extendable_k;
  int64_t lda, mem;
  float score;
} micro_t;

static int64_t actual_lda(const micro_t *s) {
  if (!s->need_buf_a) return s->K;
  int64_t lda = rnd_up(s->k_blk, 64 / DT);
  if (lda >= 512 && is_pow2(lda)) lda += 64 / DT;
  return lda;
}

// Bytes of one chunk: A, its copy, B, its VNNI copy, C and (when needed) C's f32 buffer.
static int64_t chunk_bytes(micro_t *s) {
  s->k_elems = s->k_blk * s->k_chunk * s->bs;
  s->lda = actual_lda(s);
  s->need_buf_c = (s->nthr_k > 1 && s->K > s->k_elems) || s->K > s->k_elems || s->K % s->k_blk > 0;
  int64_t a = DT * s->k_elems * s->m_elems;
  int64_t a_buf = s->need_buf_a ? DT * s->lda * s->bs * s->m_elems : 0;
  int64_t b = DT * s->k_elems * s->n_elems;
  int64_t b_buf = DT * s->n_blk * s->k_elems;
  int64_t c = DT * s->m_elems * s->n_elems;
  int64_t c_buf = s->need_buf_c ? ACC * s->m_elems * s->n_elems : 0;
  return a + a_buf + b + b_buf + c + c_buf;
}

static float thread_balance(const micro_t *s) {
  int64_t nMc = div_up(s->M, s->m_elems), nNc = div_up(s->N, s->n_elems);
  float mnb = ((((float)s->batch * ((float)s->M / (float)s->m_elems)) * ((float)s->N / (float)s->n_elems)) /
               (float)rnd_up(s->batch * nMc * nNc, s->nthr_mnb)) * (float)s->nthr_mnb;
  float kps = 1.0f;
  if (s->nthr_k > 1) {
    int64_t nKc = div_up(s->K, s->k_elems);
    kps = (((float)0.8 * ((float)s->K / (float)s->k_elems)) / (float)rnd_up(nKc, s->nthr_k)) * (float)s->nthr_k;
  }
  return (mnb * kps) / (float)s->nthr;
}

static float reuse(const micro_t *s) {
  int64_t dM = min64(s->M, 64 * 4), dN = min64(s->N, 64 * (s->need_buf_a ? 4 : 1));
  float cM = fminf((float)s->m_elems / (float)dM, 1.0f);
  float cN = fminf((float)s->n_elems / (float)dN, 1.0f);
  return 0.5f * (cM + cN);
}

static float micro_score(const micro_t *s) {
  if (!s->n_blk || !s->n_chunk || !s->m_blk || !s->m_chunk || !s->k_blk || !s->bs) return 0.0f;
  float nc = (float)min64(s->nthr, 100);
  float reuse_f = 1.0f, bal = (nc - 1.0f) / nc, cache = 1.0f / nc;
  float l2_util = 1.0f - fabsf((float)L2_THRESHOLD - (float)s->mem) / (float)max64(L2_THRESHOLD, s->mem);
  float sc = (cache * l2_util) + (reuse_f * reuse(s));
  if (bal > 0.0f) sc = sc + (bal * thread_balance(s));
  return sc / ((reuse_f + bal) + cache);
}

// set_blocking_parameters of the micro heuristic (its fields carry over from call to call).
static void micro_set(micro_t *s, int64_t nthr_k, int64_t n_blk, int64_t n_ch, int64_t m_blk, int64_t m_ch) {
  int64_t K = s->K;
  s->nthr_k = max64(1, nthr_k);
  s->nthr_mnb = s->nthr / s->nthr_k;
  s->n_blk = n_blk, s->n_chunk = n_ch, s->m_blk = m_blk, s->m_chunk = m_ch;
  if (!n_blk || !n_ch || !m_blk || !m_ch) {
    s->k_blk = s->k_chunk = s->k_elems = s->bs = 0;
    s->score = 0.0f;
    return;
  }
  s->n_elems = n_blk * n_ch;
  s->m_elems = m_blk * m_ch;
  if (K < GM_AMX_WEI_K_BLK) {
    s->k_blk = rnd_up(K, 2);
    s->bs = 1;
  } else {
    s->k_blk = min64(rnd_up(div_up(K, s->nthr_k), 2), GM_AMX_WEI_K_BLK);
    int64_t nkpt = div_up(div_up(K, s->k_blk), s->nthr_k);
    s->bs = nkpt;
    // shrink the batch until a chunk fits the L2
    int64_t bytes = chunk_bytes(s);
    int64_t div_min = bytes / L2_THRESHOLD, div_max = div_up(bytes, L2_THRESHOLD);
    if (div_min > (s->lda_pow2 ? 2 : 0) && s->bs > 1) {
      int64_t kc1 = max64(s->bs / div_min, 1), kc2 = div_up(s->bs, div_max);
      int64_t t1 = nkpt % kc1, t2 = nkpt % kc2;
      s->bs = (!(t1 == 0 || t2 < t1) || t2 == 0) ? kc2 : kc1;
    }
    s->k_elems = s->k_blk * s->bs * s->k_chunk;
    int64_t brg_k = s->k_blk * s->bs, k_tail = K % s->k_blk;
    s->extendable_k = K % GM_AMX_WEI_K_BLK != 0 && brg_k > GM_AMX_WEI_K_BLK && !s->copy_a && s->lda == K;
    if (s->extendable_k) {
      s->k_blk = brg_k >= K ? K : brg_k;
      s->k_chunk = 1;
      s->bs = 1;
    } else if (k_tail == 0 && K % (s->k_blk * s->bs) == 0) {
      s->k_blk = brg_k;
      s->bs = 1;
    } else if (s->nthr_k == 1 && K == s->k_blk * s->bs + k_tail) {
      s->k_blk = brg_k;
      s->bs = 2;
    }
  }
  s->need_buf_a = s->copy_a || (!s->extendable_k && K % 2 != 0);
  s->mem = chunk_bytes(s);
  s->score = micro_score(s);
}

static void micro_find_best(int64_t M, int64_t N, int64_t K, bool trans_a, int64_t nthr, int64_t batch, gm_amx_kconf *out) {
  int64_t M_blk = min64(M, 64); // the first s * r dividing M (r = 16 .. 13, s = 4 .. 2)
  for (int r = 16, hit = 0; r > 12 && !hit; r--)
    for (int sm = 4; sm > 1 && !hit; sm--)
      if (M % (sm * r) == 0) M_blk = sm * r, hit = 1;
  int64_t N_blk = min64(trans_a ? 64 : 32, N); // B's N block: 32 where the macro heuristic could run
  bool fixed_tail = K % GM_AMX_WEI_K_BLK > 0 && K > GM_AMX_WEI_K_BLK;
  int64_t K_blk = K < GM_AMX_WEI_K_BLK ? rnd_up(K, 2) : (fixed_tail ? GM_AMX_WEI_K_BLK : K);
  micro_t init = {.M = M, .N = N, .K = K, .nthr = nthr, .batch = batch, .copy_a = trans_a,
                  .lda_pow2 = !trans_a && is_pow2(K) && K >= 8192 / DT, .nthr_k = 1, .nthr_mnb = nthr,
                  .k_blk = K_blk, .bs = max64(K / K_blk, 1), .k_chunk = 1, .m_blk = M_blk, .n_blk = N_blk,
                  .m_chunk = 1, .n_chunk = 1, .m_elems = M_blk, .n_elems = N_blk, .need_buf_a = trans_a};
  init.k_elems = init.k_blk * init.bs;
  micro_t best = init, cur = init;
  int64_t max_k_par = div_up(K, 1024);
  int64_t max_nthr_k = batch == 1 ? min64(max64(1, min64(7, nthr / 8)), max_k_par) : 1; // no K split of a 3-D product
  for (int64_t nthr_k = 1; nthr_k <= max_nthr_k; nthr_k++) {
    int64_t nthr_bmn = nthr / nthr_k;
    int64_t num_M_blk = div_up(M, M_blk), num_N_blk = div_up(N, N_blk);
    int64_t npw = batch * num_M_blk * num_N_blk * min64(max_k_par, nthr_k);
    bool lot2 = npw > 16 * nthr, low_par = (double)npw < 1.5 * (double)nthr;
    int64_t min_M_blk = low_par && M_blk > 32 ? div_up(M_blk, 2) : M_blk;
    int64_t min_N_blk = N_blk; // B's layout is given: no smaller N block
    int64_t dM = min64(4, num_M_blk), dN = min64(lot2 ? 6 : 4, num_N_blk);
    int64_t mc[MAX_M_CANDIDATES];
    int n_mc = 0;
    for (int64_t m = M_blk; m >= min_M_blk; m = m > 1 ? div_up(m, 2) : m - 1) mc[n_mc++] = m; // <= 7
    if (M > 16)
      for (int64_t m = min64((M / 16) * 16, 64); m >= rnd_up(min_M_blk, 16); m -= 16) { // <= 4
        bool seen = false;
        for (int i = 0; i < n_mc; i++) seen = seen || mc[i] == m;
        if (!seen) mc[n_mc++] = m;
      }
    bool found = false;
    for (int64_t n_blk = N_blk; n_blk >= min_N_blk; n_blk -= 16)
      for (int i = 0; i < n_mc; i++)
        for (int64_t n_ch = dN; n_ch >= 1; n_ch--)
          for (int64_t m_ch = dM; m_ch >= 1; m_ch--) {
            micro_set(&cur, nthr_k, n_blk, n_ch, mc[i], m_ch);
            int64_t work = batch * div_up(M, mc[i] * m_ch) * div_up(N, n_blk * n_ch);
            if (work < nthr_bmn * 3 && work % nthr_bmn != 0 && max_nthr_k == 1) continue;
            if (cur.score > best.score) best = cur, found = true;
          }
    if (!found) {
      micro_set(&cur, nthr_k, min_N_blk, 1, min_M_blk, 1);
      if (cur.score > best.score) best = cur;
    }
  }
  *out = (gm_amx_kconf){(int)best.k_blk, (int)best.k_chunk, (int)best.bs, (int)best.nthr_k, (int)best.m_blk,
                        (int)(best.lda ? best.lda : K), false, false};
}

// oneDNN's balance211: the first item of thread tid when n items are shared by team threads.
static int64_t balance211_start(int64_t n, int64_t team, int64_t tid) {
  int64_t n1 = div_up(n, team), n2 = n1 - 1, t1 = n - n2 * team;
  return tid <= t1 ? n1 * tid : t1 * n1 + (tid - t1) * n2;
}

// skip_extendable_k's test for one call of r elements: r splits into ceil(r / 32) equal tiles of
// an even number of elements.
static bool common_tile(int64_t r) {
  int64_t n = div_up(r, GM_AMX_WEI_K_BLK);
  return r % n == 0 && (r / n) % 2 == 0;
}

// brgemm's K tile for a call of r elements that may not read past K (init_kernel_blocking): the
// largest even i <= 32 dividing r (2 when none does).
static int rd_block(int64_t r) {
  for (int i = GM_AMX_WEI_K_BLK; i > 2; i -= 2)
    if (r % i == 0) return i;
  return 2;
}

// The tiles of the calls (onednn_amx.h: tile, last_tile) for the chosen blocking: under the macro
// heuristic with K % 32 != 0 and A contiguous, oneDNN skips "extendable K" when every call (k_blk
// elements, and the last call's K % k_blk) splits into equal even tiles, unless A is copied inside
// the kernel; the calls then run brgemm's divisor tiles (tools/ref/onednn_amx_blocking.py, tiles).
static void set_tiles(const gm_amx_kconf *c, int64_t K, gm_amx_blocking *out) {
  out->tile = out->last_tile = GM_AMX_WEI_K_BLK;
  if (K % GM_AMX_WEI_K_BLK == 0 || !c->macro || c->fused_copy_a || c->lda != K) return;
  int64_t step = (int64_t)c->k_blk * c->bs, whole = min64(step, K), tail = step < K ? K % step : 0;
  if (!common_tile(whole) || (tail && !common_tile(tail))) return; // extendable K: tiles of 32
  out->tile = rd_block(whole);
  out->last_tile = tail ? rd_block(tail) : out->tile;
}

int gm_onednn_amx_blocking(int M, int N, int K, bool trans_a, bool trans_b, bool with_sum, int nthr, int batch,
                           gm_amx_blocking *out) {
  (void)with_sum; // a sum post-op emits no vector code in the AMX kernels: no effect on the choice
  if (M < 1 || N < 1 || K < 1 || nthr < 1 || batch < 1) return -1;
  if ((int64_t)M * N * K * batch <= 16 * 16 * 16) return GM_AMX_NOT_ONEDNN; // torch keeps it in ATen
  if (M == 1 || N == 1) return GM_AMX_NOT_AMX;                              // oneDNN's GEMV path
  gm_amx_kconf c;
  int r = trans_a ? 0 : gm_onednn_amx_macro(M, N, K, trans_b, nthr, batch, &c);
  if (r < 0) return -1;
  if (r == 0) {
    micro_find_best(M, N, K, trans_a, nthr, batch, &c);
    // the AMX kernel declines a "small shape": the bytes of one A block (M_blk rows of LDA) <= 126
    if ((int64_t)DT * c.m_blk * c.lda <= 126) return GM_AMX_NOT_AMX;
    // an odd K over one tile with A as stored under the micro heuristic (every macro blocking
    // scored 0): not modelled (K <= 32 is one call anyway). With A transposed (copied, its K
    // padded to whole pairs) the order is the even K's: calls of k_blk * bs, the last partial
    // tile's call its own (validated: probe_bf16_amx_blocks.py --triples --ops mmta, K 33-2049).
    if (K % 2 != 0 && K > GM_AMX_WEI_K_BLK && !trans_a) return -1;
  } else if ((int64_t)DT * c.m_blk * c.lda <= 126) {
    return GM_AMX_NOT_AMX;
  }
  int64_t step = (int64_t)c.k_blk * c.bs;
  out->chunk = step >= K ? 0 : (int)step;
  set_tiles(&c, K, out);
  out->tail = 0;
  if (K > c.k_blk && K % c.k_blk != 0) {
    int64_t last = (div_up(K, step) - 1) * step;
    int64_t tail_start = last + (K - last) / c.k_blk * c.k_blk;
    if (tail_start > 0 && tail_start < K && tail_start % step != 0) {
      if (tail_start != K - K % GM_AMX_WEI_K_BLK) return -1; // (never: the contract's start)
      out->tail = 1;
    }
  }
  out->n_parts = 1;
  out->part_start[0] = 0;
  if (c.nthr_k > 1) {
    int64_t kce = (int64_t)c.k_blk * c.k_chunk_size * c.bs;
    int64_t k_chunks = div_up(K, kce);
    if (k_chunks > 1) {
      int64_t n = min64(c.nthr_k, k_chunks);
      if (n > GM_AMX_MAX_PARTS) return -1;
      out->n_parts = (int)n;
      for (int64_t t = 1; t < n; t++) out->part_start[t] = (int)(balance211_start(k_chunks, c.nthr_k, t) * kce);
    }
  }
  return 0;
}
