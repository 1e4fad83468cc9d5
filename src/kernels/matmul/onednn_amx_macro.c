// oneDNN 3.13's "macro" AMX blocking heuristic for A as stored (torch.addmm, torch.mm, F.linear),
// ported from tools/ref/onednn_amx_blocking.py (class Macro), which follows oneDNN's
// matmul_amx_blocking_params_macro_t (src/cpu/x64/matmul/amx_blocking_heuristics.cpp):
// maybe_small_dims_heuristics, find_best_blocking (every thread count and b x m x k x n division
// of it), divs_are_acceptable, set_tmul_sizes, set_decomposition, calc_k_blk, the horizontal /
// vertical traversal of set_blocking_parameters (with its "give up on the L1" retry), the L2 usage
// and bandwidth helpers, calculate_blocking_scores (a roofline cost model on a per-level bandwidth
// table measured on Emerald Rapids) and the comparison of two blockings.
//
// Decision contract: gm_onednn_amx_macro returns the K blocking of the best-scoring division, or
// 0 when every division scores 0 (then the micro heuristic decides). Every score is computed in
// binary32 in the library's order, so that equal and nearly equal scores compare as there: do not
// reorder a float expression here. Sizes are int64_t (bytes of a thread's share of A, B, C).
#include "kernels/matmul/onednn_amx.h"

#include <stdint.h>

enum {
  L1_THRESHOLD = 5 * GM_AMX_L1D / 6,     // the L1 a blocking may fill
  L2_THRESHOLD = 3 * GM_AMX_L2 / 4,      // the L2 a blocking may fill
  L2_WAYS_THRESHOLD = 3 * GM_AMX_L2_WAYS / 4,
  PAGE_4K = 4096,
  DT = 2,                                // bytes of bf16 (A, B and C)
  ACC = 4,                               // bytes of the f32 accumulator
  MIN_K_ELEM = 256 / DT,                 // least K per thread when K is split
  MIN_MN_ELEM = 64 / DT,                 // least M or N per thread when split
  K_WRITE_BOUND = 256 / DT,              // below this K per thread a product is write bound
  MIN_N_WRITE_BOUND = 256 / DT,
  MAX_DIM = 1 << 21                      // larger dimensions: not modelled (candidate arrays)
};

// The bandwidth table (bytes per cycle) of oneDNN's cost model.
static const float L1_LOAD_HIT_BW = (float)106.41;
static const float L1_STORE_HIT_BW = (float)106.41;
static const float L1_LOAD_MISS_BW = (float)(106.41 / 2.28);
static const float L1_STORE_MISS_BW = (float)(106.41 / 2.85);
static const float LLC_BW = 6.0f;
static const int DRAM_CORES[6] = {1, 2, 4, 8, 16, 32};
static const float DRAM_BW[6] = {2.28f, 0.9f, 2.39f, 2.98f, 3.31f, 4.06f};

static int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }
static int64_t rnd_up(int64_t a, int64_t b) { return div_up(a, b) * b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

// DRAM bandwidth for x cores sharing it: linear interpolation in the table, in binary32.
static float dram_bw(int x) {
  int i = 0;
  while (i < 6 && DRAM_CORES[i] < x) i++;
  if (i == 6) return DRAM_BW[5];
  if (i == 0) return DRAM_BW[0];
  float dy = DRAM_BW[i] - DRAM_BW[i - 1];
  float dx = (float)x - (float)DRAM_CORES[i - 1];
  return DRAM_BW[i - 1] + (dy * dx) / (float)(DRAM_CORES[i] - DRAM_CORES[i - 1]);
}

typedef struct {
  int64_t M, N, K, nthr, batch; // the problem (batch: slices of a 3-D product) and all threads
  bool trans_b;
  int64_t nthr_b, nthr_m, nthr_k, nthr_n, nthr_;
  int64_t m_pt, k_pt, n_pt, b_pt; // per thread
  int64_t m_tmul, n_tmul, k_tmul, m_dec, n_dec;
  bool horiz, a_nt, fused_copy_a;
  int64_t k_blk, k_chunk, m_chunk, n_chunk, m_blk, n_blk;
  float score;
} macro_t;

// Block candidates of a dimension: the distinct ceil(inner / g), g = 1, 2, ..., largest first.
static int candidates(int64_t dim_pt, int64_t dec, int *out) {
  int64_t inner = div_up(dim_pt, dec);
  int n = 0;
  for (int64_t g = 1; g <= inner; g++) {
    int64_t v = div_up(inner, g);
    if (n == 0 || out[n - 1] != v) out[n++] = (int)v;
  }
  return n;
}

static void set_divs(macro_t *s, int64_t b, int64_t m, int64_t k, int64_t n) {
  s->nthr_b = b, s->nthr_m = m, s->nthr_k = k, s->nthr_n = n;
  s->m_pt = div_up(s->M, m), s->k_pt = div_up(s->K, k), s->n_pt = div_up(s->N, n), s->b_pt = div_up(s->batch, b);
}

static void set_tmul_and_dec(macro_t *s) {
  s->m_tmul = div_up(s->m_pt, div_up(s->m_pt, 16));
  s->n_tmul = 16;
  s->k_tmul = min64(GM_AMX_WEI_K_BLK, s->K);
  s->m_dec = min64(s->M, 2 * s->m_tmul);
  s->n_dec = min64(s->N, 2 * s->n_tmul);
}

static bool divs_ok(const macro_t *s) {
  bool bad_m = rnd_up(s->m_pt, s->m_tmul) < MIN_MN_ELEM && s->nthr_m > 1;
  bool bad_k = s->k_pt < MIN_K_ELEM && s->nthr_k > 1;
  int64_t n_min = s->nthr_k == 1 && s->k_pt < K_WRITE_BOUND ? MIN_N_WRITE_BOUND : MIN_MN_ELEM;
  bool bad_n = rnd_up(s->n_pt, s->n_tmul) < n_min && s->nthr_n > 1;
  return !(bad_m || bad_k || bad_n || s->nthr_b > s->batch);
}

// The K block whose A (l1_dim = m_dec) or B (n_dec) slice fits the L1 beside the C tiles.
static int64_t calc_k_blk(const macro_t *s, int64_t l1_dim) {
  uint64_t c_tiles = (uint64_t)(s->m_dec * s->n_dec * ACC);
  uint64_t d_tiles = (uint64_t)(s->m_dec * rnd_up(s->n_dec * DT, 64));
  uint64_t avail = (uint64_t)L1_THRESHOLD - (c_tiles * 2 + d_tiles); // wraps as size_t does
  uint64_t largest_k_tiles = avail / (uint64_t)(l1_dim * DT) / (uint64_t)s->k_tmul;
  uint64_t kpt_tiles = (uint64_t)div_up(div_up(s->K, s->k_tmul), s->nthr_k);
  uint64_t nblocks = (kpt_tiles + largest_k_tiles - 1) / largest_k_tiles;
  return min64((int64_t)((kpt_tiles + nblocks - 1) / nblocks) * s->k_tmul, s->K);
}

static int64_t l2_usage(const macro_t *s, int64_t k_chunk, int64_t mn_blk, int64_t k_blk, bool horiz, bool force) {
  int64_t dec = horiz ? s->m_dec : s->n_dec;
  int64_t kk = min64(k_blk * k_chunk, s->k_pt);
  int64_t l1 = 2 * dec * kk * DT;
  int64_t l2 = mn_blk * kk * DT;
  if (force) l2 += mn_blk * k_blk * k_chunk * DT;
  int64_t c_post = horiz ? 2 * s->m_dec * rnd_up(mn_blk * DT, 64) : 2 * rnd_up(s->n_dec * DT, 64) * mn_blk;
  int64_t c_tmp = k_blk == s->K ? 2 * s->m_dec * s->n_dec * ACC : 2 * dec * mn_blk * ACC;
  return l1 + l2 + c_tmp + c_post;
}

static int64_t l2_usage_with_c(const macro_t *s, int64_t k_chunk, int64_t mn_blk, int64_t k_blk, bool horiz) {
  int64_t per = horiz ? s->m_pt : s->n_pt;
  int64_t kk = min64(k_blk * k_chunk, s->k_pt);
  return 2 * per * kk * DT + 2 * mn_blk * kk * DT + per * mn_blk * ACC;
}

// Compute over bytes moved for one m_blk x (k_blk * k_chunk) x n_blk step.
static float ratio(const macro_t *s, int64_t m_blk, int64_t k_chunk, int64_t k_blk, int64_t n_blk, bool horiz) {
  int64_t kk = min64(k_blk * k_chunk, s->k_pt);
  bool fits = l2_usage_with_c(s, k_chunk, horiz ? n_blk : m_blk, k_blk, horiz) < L2_THRESHOLD;
  int64_t c_bw = (fits || kk == s->K) && s->nthr_k == 1 ? 0 : m_blk * n_blk * ACC;
  int64_t bw = m_blk * kk * DT + n_blk * kk * DT + c_bw;
  return (float)(m_blk * kk * n_blk) / (float)bw;
}

static float single_core(const macro_t *s, int64_t k_chunk, int64_t mn_blk, int64_t k_blk, bool horiz, bool force) {
  if (l2_usage(s, k_chunk, mn_blk, k_blk, horiz, force) > L2_THRESHOLD) return 0.0f;
  return horiz ? ratio(s, s->m_dec, k_chunk, k_blk, mn_blk, true) : ratio(s, mn_blk, k_chunk, k_blk, s->n_dec, false);
}

// The search state of one set_blocking_parameters call.
typedef struct {
  int64_t best_k_h, best_n_h, best_m_v, best_k_v;
  float score_h, score_v;
  bool h_np, v_np; // traversal not possible
  int m_c[GM_AMX_BLK_CANDIDATES], n_c[GM_AMX_BLK_CANDIDATES], k_c[GM_AMX_BLK_CANDIDATES];
  int n_m, n_n;
} search_t;

static void calc_horizontal(const macro_t *s, search_t *st, int64_t k_blk_h, int64_t min_k_chunk, bool force_b) {
  if (rnd_up(s->m_pt, s->m_dec) * (s->nthr_m - 1) >= s->M || rnd_up(s->k_pt, k_blk_h) * (s->nthr_k - 1) >= s->K) {
    st->h_np = true;
    return;
  }
  int n_k = candidates(s->k_pt, k_blk_h, st->k_c);
  st->best_n_h = 0;
  for (int i = 0; i < st->n_n; i++)
    for (int j = 0; j < n_k; j++) {
      float sc = single_core(s, st->k_c[j], st->n_c[i] * s->n_dec, k_blk_h, true, force_b);
      if (sc > st->score_h && st->k_c[j] >= min_k_chunk)
        st->score_h = sc, st->best_k_h = st->k_c[j], st->best_n_h = st->n_c[i];
    }
  if (st->best_n_h == 0) {
    st->h_np = true;
    return;
  }
  if (rnd_up(s->n_pt, st->best_n_h * s->n_dec) * (s->nthr_n - 1) >= s->N) st->h_np = true;
  if (rnd_up(s->k_pt, st->best_k_h * k_blk_h) * (s->nthr_k - 1) >= s->K) st->h_np = true;
}

static void calc_vertical(const macro_t *s, search_t *st, int64_t k_blk_v) {
  if (rnd_up(s->n_pt, s->n_dec) * (s->nthr_n - 1) >= s->N || rnd_up(s->k_pt, k_blk_v) * (s->nthr_k - 1) >= s->K) {
    st->v_np = true;
    return;
  }
  int n_k = candidates(s->k_pt, k_blk_v, st->k_c);
  for (int i = 0; i < st->n_m; i++)
    for (int j = 0; j < n_k; j++) {
      float sc = single_core(s, st->k_c[j], st->m_c[i] * s->m_dec, k_blk_v, false, false);
      if (sc > st->score_v) st->score_v = sc, st->best_k_v = st->k_c[j], st->best_m_v = st->m_c[i];
    }
  if (st->best_m_v == 0) {
    st->v_np = true;
    return;
  }
  int64_t bm = st->best_m_v, bk = st->best_k_v;
  if (rnd_up(s->m_pt, bm * s->m_dec) * (s->nthr_m - 1) >= s->M) st->v_np = true;
  if (rnd_up(s->k_pt, bk * k_blk_v) * (s->nthr_k - 1) >= s->K) st->v_np = true;
  int64_t l2_util = 0;
  if (!st->v_np) {
    l2_util = l2_usage_with_c(s, bk, bm * s->m_dec, k_blk_v, false);
    if (l2_util > L2_THRESHOLD) l2_util = l2_usage(s, bk, bm * s->m_dec, k_blk_v, false, false);
  }
  int64_t k_steps = div_up(s->K, k_blk_v * bk);
  if (k_steps != 1 && (k_steps != s->nthr_k || l2_util * s->nthr_k >= L2_THRESHOLD)) st->v_np = true;
  // C's rows at a 4 KiB-multiple stride would crowd a few L2 sets
  int64_t l2_line = (int64_t)GM_AMX_L2_SETS * GM_AMX_CACHE_LINE;
  int64_t stride = s->N * DT % PAGE_4K;
  if (stride == 0) stride = PAGE_4K;
  if (l2_line % stride == 0 && div_up(stride * s->m_pt, l2_line) >= L2_WAYS_THRESHOLD) st->v_np = true;
}

static float scores(const macro_t *s);

// set_blocking_parameters: false when neither traversal is possible.
static bool set_blocking(macro_t *s, search_t *st, bool force_h, bool force_b) {
  st->n_m = candidates(s->m_pt, s->m_dec, st->m_c);
  st->n_n = candidates(s->n_pt, s->n_dec, st->n_c);
  st->best_k_h = st->best_n_h = st->best_m_v = st->best_k_v = 0;
  st->score_h = st->score_v = 0.0f;
  st->h_np = false, st->v_np = force_h;
  int64_t k_blk_h = calc_k_blk(s, s->m_dec);
  calc_horizontal(s, st, k_blk_h, 0, force_b);
  int64_t k_blk_v = calc_k_blk(s, s->n_dec);
  calc_vertical(s, st, k_blk_v);
  if (st->v_np && st->h_np) return false;
  bool horiz;
  if (st->h_np) horiz = false;
  else if (st->v_np) horiz = true;
  else if (s->m_pt < s->m_tmul * 2) horiz = true;
  else if (s->n_pt < s->n_tmul * 2) horiz = false;
  else horiz = s->m_pt >= s->n_pt;
  s->horiz = horiz;
  int64_t md = s->m_dec, nd = s->n_dec;
  if (horiz) {
    int64_t c_l1 = nd * md * ACC, d_post = md * rnd_up(nd * DT, 64);
    s->a_nt = false;
    // (a sum post-op emits no vector code: never post-op bound)
    if (k_blk_h < s->K && div_up(s->K, k_blk_h) * (k_blk_h * md * DT) + 2 * c_l1 + d_post > L1_THRESHOLD) {
      // give up on the L1: one-tile K blocks, chunked to fit the L2, at least the L1 block's tiles
      st->score_h = 0.0f;
      calc_horizontal(s, st, GM_AMX_WEI_K_BLK, k_blk_h / GM_AMX_WEI_K_BLK, force_b);
      k_blk_h = min64(GM_AMX_WEI_K_BLK * st->best_k_h, s->K);
      st->best_k_h = 1;
      s->a_nt = true;
    }
    bool a_fits = k_blk_h * md * DT + 2 * c_l1 + d_post <= L1_THRESHOLD;
    bool write_bound = s->nthr_k == 1 && s->k_pt < K_WRITE_BOUND;
    if (a_fits && !write_bound) s->a_nt = false;
    s->k_blk = k_blk_h, s->k_chunk = st->best_k_h;
    s->n_blk = min64(st->best_n_h * nd, s->N), s->n_chunk = 1;
    s->m_blk = md, s->m_chunk = div_up(s->m_pt, md);
    // A copied inside the kernel when K is not a multiple of the tile and A meets three or more
    // 32-column blocks per call (use_fused_copy_a)
    s->fused_copy_a = s->K % GM_AMX_WEI_K_BLK != 0 && s->n_blk >= nd * 3 && s->k_blk >= 128;
  } else {
    s->k_blk = k_blk_v, s->k_chunk = st->best_k_v;
    s->n_blk = nd, s->n_chunk = div_up(s->n_pt, nd);
    s->m_blk = min64(st->best_m_v * md, s->M), s->m_chunk = 1;
    s->a_nt = true;
    s->fused_copy_a = false;
  }
  s->score = scores(s);
  return true;
}

// calculate_blocking_scores: useful MACs per peak cycle over the modelled cycles (B is always
// copied to VNNI blocks for torch's calls); 0 when a K split's partial C would not fit the L2.
static float scores(const macro_t *s) {
  bool h = s->horiz;
  int64_t mpt = s->m_pt, kpt = s->k_pt, npt = s->n_pt, md = s->m_dec, nd = s->n_dec;
  int64_t a_size = mpt * kpt * DT, b_size = npt * kpt * DT, d_size = mpt * npt * DT;
  int64_t c_sz = s->nthr_k == 1 ? DT : ACC;
  int64_t tmul_div = s->m_tmul * s->k_tmul * s->n_tmul;
  int64_t strip_dst = h ? md * npt * c_sz : nd * mpt * c_sz;
  float tmuls = (float)(h ? md * kpt * npt / tmul_div : nd * kpt * mpt / tmul_div);
  float num_strip = (float)(h ? div_up(mpt, md) : div_up(npt, nd));
  float nt_miss = (float)(h ? b_size : a_size);
  float l1_reuse = (float)(h ? div_up(s->n_blk, nd) : div_up(s->m_blk, md));
  float s1_shared = (float)(h ? b_size : a_size);
  float s1_private = (float)((h ? md : nd) * kpt * DT + strip_dst);
  int s1_coef = (int)(h ? s->nthr_m : s->nthr_n);
  float sm_shared = (float)((h ? md : nd) * kpt * DT);
  float sm_private = (float)strip_dst;
  int64_t smc = h ? s->nthr_n : s->nthr_m;
  int sm_coef = (int)(smc > 1 ? smc : 1);
  float tm_miss = sm_shared * 2.0f;
  float tm_hit = sm_shared * (l1_reuse - 1.0f);
  float c_elem = (float)(s->m_blk * s->n_blk);
  int64_t nblocks_n = div_up(s->n_blk, nd);
  float c_pw_miss = (float)(s->m_blk * nblocks_n * rnd_up(nd * DT, 64));
  float c_pw_total = (float)(s->m_blk * nblocks_n * div_up(nd, 16) * 64);
  float c_pw_hit = c_pw_total - c_pw_miss;
  float c_read_tmp = c_elem * (float)ACC;
  float bw_tmp = s->k_blk == s->K ? L1_LOAD_HIT_BW : L1_STORE_MISS_BW;
  float c_tmp_l1 = (((float)ACC * c_elem) * (float)s->k_chunk) / bw_tmp;
  float c_l1 =
      (((c_pw_miss / L1_STORE_MISS_BW) + (c_pw_hit / L1_STORE_HIT_BW)) + (c_read_tmp / L1_STORE_HIT_BW)) + c_tmp_l1;
  float l1_cycles = (((tm_miss / L1_LOAD_MISS_BW) + (tm_hit / L1_LOAD_HIT_BW)) + (nt_miss / L1_LOAD_MISS_BW)) + c_l1;
  float b_tr_h = h ? s1_shared / dram_bw(s1_coef) : 0.0f;
  float b_tr_v = h ? 0.0f : sm_shared / dram_bw(sm_coef);
  float sm_dram, sm_llc;
  if (!h) {
    sm_dram = sm_private / dram_bw(1);
    sm_llc = sm_private / LLC_BW;
  } else {
    sm_dram = (sm_shared / dram_bw(sm_coef)) + (sm_private / dram_bw(1));
    sm_llc = (sm_private + sm_shared) / LLC_BW;
  }
  float strip_tmul = tmuls * (float)s->m_tmul; // cycles per TMUL: m_tmul * 64 * 16 / 1024
  float mx = sm_dram;                          // (the post-ops' vector cycles are 0)
  if (sm_llc > mx) mx = sm_llc;
  if (l1_cycles > mx) mx = l1_cycles;
  if (strip_tmul > mx) mx = strip_tmul;
  if (0.0f > mx) mx = 0.0f;
  float sm_cycles = b_tr_v + mx;
  float s1_cycles;
  if (!h) s1_cycles = (s1_shared / dram_bw(s1_coef)) + (s1_private / dram_bw(1));
  else if (l2_usage(s, s->k_chunk, s->n_blk, s->k_blk, true, true) < L2_THRESHOLD) s1_cycles = sm_cycles;
  else s1_cycles = s1_shared / LLC_BW;
  float gemm_cycles = (b_tr_h + s1_cycles) + ((num_strip - 1.0f) * sm_cycles);
  float red = 0.0f;
  if (s->nthr_k != 1) {
    if (!(mpt * npt * ACC * 2 < L2_THRESHOLD && s->batch == 1)) return 0.0f; // (no K split of a 3-D product)
    float rd_bytes = (float)(s->M * rnd_up(s->N, 16) * ACC * (s->nthr_k - 1) / (s->nthr_m * s->nthr_n));
    float rd = a_size + b_size + d_size < L2_THRESHOLD ? rd_bytes / dram_bw(2) : rd_bytes / LLC_BW;
    float wr = (float)(s->M * s->N * DT / (s->nthr_m * s->nthr_n)) / dram_bw(1);
    red = (rd + wr) + 25000.0f;
  }
  float total_macs = (float)(s->M * s->K * s->N * s->batch);
  float total_cycles = (gemm_cycles + red) * (float)s->b_pt;
  float peak = (float)(1024 / DT * s->nthr);
  return (total_macs / peak) / total_cycles;
}

// Whether blocking a beats blocking b (equal scores: the traversal that keeps A's strip in the L2
// non-temporal, else more chunks per thread).
static bool better(const macro_t *a, const macro_t *b) {
  if (b->score > a->score) return false;
  if (b->score < a->score) return true;
  if (!a->horiz && b->horiz) return a->m_pt * a->K + a->m_pt * a->N < L2_THRESHOLD && b->a_nt;
  if (a->horiz && !b->horiz) return !(b->m_pt * a->K + b->m_pt * a->N < L2_THRESHOLD && a->a_nt);
  return a->m_chunk * a->n_chunk > b->m_chunk * b->n_chunk;
}

// maybe_small_dims_heuristics: 1 when all of K is one call (*m_blk set: the M block), 0 otherwise
// (a branch that applies but leaves more than a quarter of the threads idle ends the shortcut).
static int small_dims(int64_t M, int64_t N, int64_t K, bool trans_b, int64_t nthr, int64_t *m_blk) {
  if (M <= 32 && trans_b) {
    int64_t n_dec = min64(N, 32);
    int64_t nthr_n = div_up(N, rnd_up(div_up(N, nthr), n_dec));
    *m_blk = M;
    return !((double)nthr_n < 0.75 * (double)nthr);
  }
  if (K <= GM_AMX_WEI_K_BLK) {
    int64_t nthr_m = div_up(M, div_up(M, nthr));
    int64_t m_pt = div_up(M, nthr_m);
    *m_blk = min64(M, 2 * div_up(m_pt, div_up(m_pt, 16))); // the M decomposition
    return !((double)nthr_m < 0.75 * (double)nthr);
  }
  if (N <= 32) {
    int64_t m_pc = div_up(M, nthr);
    int64_t m_dec = div_up(m_pc, div_up(m_pc, 32));
    int64_t nthr_m = div_up(M, rnd_up(m_pc, m_dec));
    *m_blk = m_dec;
    return !((double)nthr_m < 0.75 * (double)nthr);
  }
  return 0;
}

int gm_onednn_amx_macro(int M, int N, int K, bool trans_b, int nthr, int batch, gm_amx_kconf *out) {
  if (M > MAX_DIM || N > MAX_DIM || K > MAX_DIM || batch < 1 || batch > MAX_DIM || (double)M * N * K * batch > 4.0e18)
    return -1;
  int64_t sd_m_blk = 0;
  if (batch == 1 && small_dims(M, N, K, trans_b, nthr, &sd_m_blk)) { // (the shortcuts are for 2-D products)
    *out = (gm_amx_kconf){K, 1, 1, 1, (int)sd_m_blk, K, true, false};
    return 1;
  }
  macro_t init = {.M = M, .N = N, .K = K, .nthr = nthr, .batch = batch, .trans_b = trans_b, .nthr_b = 1, .nthr_m = 1,
                  .nthr_k = 1, .nthr_n = 1, .nthr_ = nthr, .m_dec = 32, .n_dec = 32, .a_nt = true,
                  .k_blk = K, .k_chunk = 1, .m_chunk = 1, .n_chunk = 1};
  macro_t best = init, cur = init;
  search_t search; // 36 KiB of block candidates
  search_t *st = &search;
  for (int64_t t = nthr; t >= 1; t--) {
    cur.nthr_ = t;
    for (int64_t b = 1; b <= t; b++) {
      if (t % b) continue;
      for (int64_t m = 1; m <= t / b; m++) {
        if ((t / b) % m) continue;
        int64_t rest = t / b / m;
        for (int64_t k = 1; k <= rest; k++) {
          if (rest % k) continue;
          set_divs(&cur, b, m, k, rest / k);
          set_tmul_and_dec(&cur);
          if (divs_ok(&cur) && set_blocking(&cur, st, false, false) && better(&cur, &best)) best = cur;
        }
      }
    }
  }
  if (!trans_b && !best.horiz) {
    // retry the winner's division as horizontal (tmul sizes and decomposition stay those of the
    // last division tried, one thread)
    cur.nthr_ = best.nthr_b * best.nthr_m * best.nthr_n * best.nthr_k;
    set_divs(&cur, best.nthr_b, best.nthr_m, best.nthr_k, best.nthr_n);
    if (set_blocking(&cur, st, true, false) && better(&cur, &best)) best = cur;
    if (set_blocking(&cur, st, true, true) && better(&cur, &best)) best = cur;
  }
  if (best.score == 0.0f) return 0;
  *out = (gm_amx_kconf){(int)best.k_blk, (int)best.k_chunk, 1, (int)best.nthr_k, (int)best.m_blk, K, true, best.fused_copy_a};
  return 1;
}
