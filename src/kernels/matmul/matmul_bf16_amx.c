// AMX-BF16 body of gm_matmul_bf16 under the intel-amx target (order and contract in matmul_bf16.c):
// one TDPBF16PS per Pt pairs of K (16: a 32-element K tile; fewer where oneDNN's tiles divide a
// call, onednn_amx.h), which is the order itself: the hardware keeps the even- and odd-index
// products of the tile in two f32 chains and adds their sum to the accumulator tile (measured with
// _tile_dpbf16ps, tools/ref/amx_tdpbf16ps_probe.c).
//
// Blocking: rows in groups of 32 (two A tiles), the strip's 32 columns as two B tiles, so four
// 16x16 f32 accumulator tiles each take one TDPBF16PS per K tile, every A and B tile loaded once
// and used twice (all eight tiles). Each accumulator still sees its K tiles in order, so the
// blocking changes no bit. When A fits in L2 and K spans more than one segment of SEG_PAIRS pairs,
// K runs outermost in segments (the B strip's rows of a segment stay in L1 while every row group
// passes over them) and the accumulators are parked in f32 between segments and reloaded, which
// is exact; otherwise each row group runs over all of K. Full K tiles are loaded straight from the
// pre-paired A rows and the B strip; the K tail (P % 16 pairs, only in the last chunk) from
// zero-padded copies: the padded pairs' products are +0 and each chain starts from +0, so adding
// them changes neither chain (a chain from +0 never becomes -0 by adding +0). Each K chunk starts
// from zero tiles and is added in f32 to the chunks before it, then alpha * sum (+ bias), with
// AVX-512. While a row group runs its last K tiles, the next group's lines of C are prefetched for
// writing, a few rows per K tile (PREFETCHW), and while a segment runs, the next segment's B rows
// into L2 (PREFETCHT1); prefetches change no value. A's rows lie lda pairs apart (the caller pads
// the stride where P pairs would put a tile's rows on few L1 sets, matmul_bf16.c's a_stride).
#include <immintrin.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels/matmul/amx_tilecfg.h"
#include "kernels/matmul/matmul_isa.h"

enum { ARCH_REQ_XCOMP_PERM = 0x1023, XFEATURE_XTILEDATA = 18 };

bool gm_bf16_amx_ready(void) {
  static atomic_int state; // 0 unknown, 1 granted, 2 refused
  int s = atomic_load(&state);
  if (s == 0) {
    s = syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0 ? 1 : 2;
    atomic_store(&state, s);
  }
  return s == 1;
}


// Tiles: 0, 1 accumulators of the first row block (m0 rows x 16 f32, columns 0-15 and 16-31);
// 2, 3 those of the second row block (m1 rows; unused when m1 = 0); 4, 5 the A tiles of the two
// row blocks (m0, m1 rows x pt pairs); 6, 7 the B tiles (pt pairs x 16 columns).
static void configure(int m0, int m1, int pt) {
  gm_amx_tilecfg c;
  memset(&c, 0, sizeof c);
  c.palette = 1;
  c.rows[0] = c.rows[1] = c.rows[4] = (uint8_t)m0;
  c.colsb[0] = c.colsb[1] = 64;
  c.colsb[4] = (uint16_t)(4 * pt);
  if (m1) {
    c.rows[2] = c.rows[3] = c.rows[5] = (uint8_t)m1;
    c.colsb[2] = c.colsb[3] = 64;
    c.colsb[5] = (uint16_t)(4 * pt);
  }
  c.rows[6] = c.rows[7] = (uint8_t)pt;
  c.colsb[6] = c.colsb[7] = 64;
  gm_amx_load_tilecfg(&c);
}

// One K tile for both row blocks (two = m1 > 0): A at a0 / a1 (row stride lda bytes), B at b
// (row stride ldb bytes, 32 columns).
#define K_TILE(a0, a1, lda, b, ldb, two)                                                                             \
  do {                                                                                                                 \
    _tile_loadd(6, (b), (ldb));                                                                                        \
    _tile_loadd(4, (a0), (lda));                                                                                       \
    _tile_loadd(7, (const uint32_t *)(b) + 16, (ldb));                                                                 \
    _tile_dpbf16ps(0, 4, 6);                                                                                           \
    _tile_dpbf16ps(1, 4, 7);                                                                                           \
    if (two) {                                                                                                         \
      _tile_loadd(5, (a1), (lda));                                                                                     \
      _tile_dpbf16ps(2, 5, 6);                                                                                         \
      _tile_dpbf16ps(3, 5, 7);                                                                                         \
    }                                                                                                                  \
  } while (0)

// a + b with a as the first source: where both are NaN the result is a's NaN (quieted). Written out
// so that the compiler cannot commute it; the operand order is the one the earlier kernel compiled
// to (the chunk's part first, then the sum; alpha * sum first, then the bias).
static inline __m512 add_nan_first(__m512 a, __m512 b) {
  __m512 r;
  __asm__("vaddps %2, %1, %0" : "=v"(r) : "v"(a), "v"(b));
  return r;
}

// n rows of 32 pairs (stride ld pairs) into dst (64-byte aligned, 32 pairs a row), zero rows after
// them up to n16: B tile rows on whole cache lines whatever the source's alignment (malloc gives
// 16 bytes, and a 128-byte row across three lines slows every B tile load).
static void copy_b_rows(uint32_t *dst, const uint32_t *src, size_t ld, int n, int n16) {
  for (int r = 0; r < n; r++) {
    _mm512_store_si512((void *)(dst + (size_t)r * 32), _mm512_loadu_si512((const void *)(src + (size_t)r * ld)));
    _mm512_store_si512((void *)(dst + (size_t)r * 32 + 16), _mm512_loadu_si512((const void *)(src + (size_t)r * ld + 16)));
  }
  if (n16 > n) memset(dst + (size_t)n * 32, 0, (size_t)(n16 - n) * 32 * 4);
}

// The cache lines of C's rows [i0, i0 + mg), columns 0 .. ncols - 1, fetched for writing (the
// group before runs its last K tiles meanwhile): C's rows lie a row stride apart (the lm_head's
// 201 KB), beyond the hardware prefetchers, and each row's first store otherwise waited on memory
// (the lm_head over 512 rows took twice as long).
// (PREFETCHW written as an instruction: gcc 12 drops __builtin_prefetch from these loops.)
static inline void prefetchw(const char *p) { __asm__ volatile("prefetchw %0" : : "m"(*p)); }
// (PREFETCHT1, the next B segment into L2; also written out for gcc 12)
static inline void prefetch_l2(const char *p) { __asm__ volatile("prefetcht1 %0" : : "m"(*p)); }

static void prefetch_rows(const float *C, int ldc, int i0, int mg, int ncols) {
  for (int r = i0; r < i0 + mg; r++) {
    const char *c = (const char *)(C + (size_t)r * ldc);
    for (int b = 0; b < ncols * 4; b += 64) prefetchw(c + b);
    prefetchw(c + ncols * 4 - 1);
  }
}

// Rows pf .. of C up to pf_end, at most PF_ROWS of them (one K tile's share); returns the next.
enum { PF_ROWS = 4 };
static inline int prefetch_some(const float *C, int ldc, int pf, int pf_end, int ncols) {
  if (pf >= pf_end) return pf;
  prefetch_rows(C, ldc, pf, pf_end - pf < PF_ROWS ? pf_end - pf : PF_ROWS, ncols);
  return pf + PF_ROWS;
}

// Row groups outermost, each over all of K: for K within one segment, for A larger than L2, and as
// the fallback when the segmented order cannot allocate its buffers. Scratch on the stack, plus an
// aligned copy of a misaligned B strip (read in place when that allocation fails).
// The K tail of B (pair rows full .. full + rem - 1, rem < 16) as one zero-padded tile.
static void load_b_tail(uint32_t btail[16][32], const uint32_t *Bs, int ldbs, int full, int rem) {
  memset(btail, 0, 16 * 32 * sizeof(uint32_t));
  for (int q = 0; q < rem; q++) memcpy(btail[q], Bs + (size_t)(full + q) * ldbs, 32 * sizeof(uint32_t));
}

static void strip_groups(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                         float alpha, const float *bias, float *C, int ldc) {
  const int rem = P % Pt, full = P - rem;
  const size_t ldab = (size_t)lda * 4; // A's row stride in bytes
  if (Pc <= 0 || Pc > P) Pc = P;
  // The full K tiles of a misaligned B strip copied once (on the stack when small).
  _Alignas(64) uint32_t bsmall[64 * 32];
  uint32_t *bcopy = NULL;
  if (((uintptr_t)Bs & 63) != 0 && full > 0) {
    bcopy = full <= 64 ? bsmall : aligned_alloc(64, (size_t)full * 32 * sizeof(uint32_t));
    if (bcopy) copy_b_rows(bcopy, Bs, (size_t)ldbs, full, full);
  }
  const uint32_t *bf = bcopy ? bcopy : Bs; // the full tiles' rows: row p at bf + p * lbf
  const size_t lbf = bcopy ? 32 : (size_t)ldbs, ldb = lbf * 4;
  // The K tail, zero-padded to a whole tile: B once per call, A per row group.
  _Alignas(64) uint32_t btail[16][32], atail[32][16];
  _Alignas(64) float sum[32][32], part[32][32];
  if (rem) load_b_tail(btail, Bs, ldbs, full, rem);
  const __m512 va = _mm512_set1_ps(alpha);
  int cfg0 = -1, cfg1 = -1;
  for (int i0 = 0; i0 < M; i0 += 32) {
    const int mg = M - i0 < 32 ? M - i0 : 32;
    const int m0 = mg < 16 ? mg : 16, m1 = mg - m0;
    const bool two = m1 > 0;
    if (m0 != cfg0 || m1 != cfg1) { configure(m0, m1, Pt); cfg0 = m0; cfg1 = m1; }
    const uint32_t *a0 = Ap + (size_t)i0 * lda, *a1 = two ? a0 + (size_t)16 * lda : a0;
    if (i0 == 0) prefetch_rows(C, ldc, 0, mg, ncols);
    int pf = i0 + 32; // the next group's rows of C, a few per K tile
    const int pf_end = M - i0 < 64 ? M : i0 + 64;
    if (rem) {
      memset(atail, 0, sizeof atail);
      for (int r = 0; r < mg; r++) memcpy(atail[r], a0 + (size_t)r * lda + full, (size_t)rem * sizeof(uint32_t));
    }
    for (int c0 = 0; c0 < P || c0 == 0; c0 += Pc) {
      const int c1 = P - c0 < Pc ? P : c0 + Pc;
      float(*dst)[32] = c0 == 0 ? sum : part;
      _tile_zero(0);
      _tile_zero(1);
      if (two) { _tile_zero(2); _tile_zero(3); }
      int p = c0;
      const int pe = c1 < full ? c1 : full;
      for (; p < pe; p += Pt) {
        K_TILE(a0 + p, a1 + p, ldab, bf + (size_t)p * lbf, ldb, two);
        pf = prefetch_some(C, ldc, pf, pf_end, ncols);
      }
      if (p < c1) K_TILE(&atail[0][0], &atail[16][0], 64, &btail[0][0], 128, two); // the tail, in the last chunk
      _tile_stored(0, &dst[0][0], 128);
      _tile_stored(1, &dst[0][16], 128);
      if (two) {
        _tile_stored(2, &dst[16][0], 128);
        _tile_stored(3, &dst[16][16], 128);
      }
      if (c0 > 0)
        for (int r = 0; r < mg; r++)
          for (int j = 0; j < 32; j += 16)
            _mm512_store_ps(&sum[r][j], add_nan_first(_mm512_load_ps(&part[r][j]), _mm512_load_ps(&sum[r][j])));
      if (c1 >= P) break;
    }
    if (pf < pf_end) prefetch_rows(C, ldc, pf, pf_end - pf, ncols);
    for (int j = 0; j < ncols; j += 16) {
      const __mmask16 m = (__mmask16)(ncols - j >= 16 ? 0xffffu : (1u << (ncols - j)) - 1u);
      const __m512 vb = bias ? _mm512_maskz_loadu_ps(m, bias + j) : _mm512_setzero_ps();
      for (int r = 0; r < mg; r++) {
        __m512 v = _mm512_mul_ps(va, _mm512_load_ps(&sum[r][j]));
        if (bias) v = add_nan_first(v, vb);
        _mm512_mask_storeu_ps(C + (size_t)(i0 + r) * ldc + j, m, v);
      }
    }
  }
  _tile_release();
  if (bcopy && bcopy != bsmall) free(bcopy);
}

// Pairs of K per segment: the B strip's rows for one segment (Ks x 128 bytes) stay in L1 while every
// row group passes over them; the accumulators are parked in f32 between segments (exact).
enum { SEG_PAIRS = 128 };
// The most bytes of pre-paired A for which segments pay (half of SPR's 2 MiB L2).
#define A_L2_BYTES ((size_t)1 << 20)

// Rows [i0, i0 + mg) of sum into C: alpha * sum (+ bias).
static void finish_rows(const float *sum, int i0, int mg, int ncols, __m512 va, const float *bias, float *C, int ldc) {
  for (int j = 0; j < ncols; j += 16) {
    const __mmask16 m = (__mmask16)(ncols - j >= 16 ? 0xffffu : (1u << (ncols - j)) - 1u);
    const __m512 vb = bias ? _mm512_maskz_loadu_ps(m, bias + j) : _mm512_setzero_ps();
    for (int r = i0; r < i0 + mg; r++) {
      __m512 v = _mm512_mul_ps(va, _mm512_load_ps(sum + (size_t)r * 32 + j));
      if (bias) v = add_nan_first(v, vb);
      _mm512_mask_storeu_ps(C + (size_t)r * ldc + j, m, v);
    }
  }
}

static void store_group(float *dst, int i0, bool two) {
  float *d = dst + (size_t)i0 * 32;
  _tile_stored(0, d, 128);
  _tile_stored(1, d + 16, 128);
  if (two) {
    _tile_stored(2, d + 16 * 32, 128);
    _tile_stored(3, d + 16 * 32 + 16, 128);
  }
}

static void load_group(const float *src, int i0, bool two) {
  const float *d = src + (size_t)i0 * 32;
  _tile_loadd(0, d, 128);
  _tile_loadd(1, d + 16, 128);
  if (two) {
    _tile_loadd(2, d + 16 * 32, 128);
    _tile_loadd(3, d + 16 * 32 + 16, 128);
  }
}

void gm_bf16_strip_amx(const uint32_t *Ap, int P, int lda, int Pc, int Pt, const uint32_t *Bs, int ldbs, int M, int ncols,
                       float alpha, const float *bias, float *C, int ldc) {
  const int rem = P % 16, full = P - rem;
  const size_t ldab = (size_t)lda * 4; // A's row stride in bytes
  if (Pc <= 0 || Pc > P) Pc = P;
  // One segment, or A too large for L2 (then it streams from L3 once per strip whatever the order,
  // and passes along whole rows stream it faster, measured), or tiles narrower than 16 pairs (a
  // call of K % 32 != 0 elements, at most a few hundred): row groups outermost.
  if (P <= SEG_PAIRS || (size_t)M * lda * 4 > A_L2_BYTES || Pt != 16) {
    strip_groups(Ap, P, lda, Pc, Pt, Bs, ldbs, M, ncols, alpha, bias, C, ldc);
    return;
  }
  const bool chunks = Pc < P;
  // acc: the running chunk of every row (32 f32 a row); sum: the finished chunks (acc itself when
  // there is one chunk).
  // (the thread's kept buffers: this runs once per strip, and a fresh 64 KB or more each time cost
  // page faults whenever glibc trimmed its heap in between)
  const size_t buf = (size_t)((M + 31) / 32 * 32) * 32 * sizeof(float);
  float *acc = gm_matmul_scratch(GM_SCRATCH_AMX_ACC, buf), *sum = chunks ? gm_matmul_scratch(GM_SCRATCH_AMX_SUM, buf) : acc;
  uint32_t *bseg = gm_matmul_scratch(GM_SCRATCH_AMX_BSEG, (size_t)SEG_PAIRS * 32 * sizeof(uint32_t));
  if (!acc || !sum || !bseg) {
    strip_groups(Ap, P, lda, Pc, Pt, Bs, ldbs, M, ncols, alpha, bias, C, ldc);
    return;
  }
  _Alignas(64) uint32_t btail[16][32], atail[32][16];
  if (rem) load_b_tail(btail, Bs, ldbs, full, rem);
  const __m512 va = _mm512_set1_ps(alpha);
  int cfg0 = -1, cfg1 = -1;
  for (int c0 = 0;; c0 += Pc) {
    const int c1 = P - c0 < Pc ? P : c0 + Pc;
    for (int s0 = c0;;) {
      const int s1 = c1 - s0 < SEG_PAIRS ? c1 : s0 + SEG_PAIRS;
      const int pe = s1 < full ? s1 : full;
      const bool bcopy = ((uintptr_t)Bs & 63) != 0;
      if (bcopy) copy_b_rows(bseg, Bs + (size_t)s0 * ldbs, (size_t)ldbs, pe - s0, pe - s0);
      const uint32_t *bs = bcopy ? bseg : Bs + (size_t)s0 * ldbs; // row p at bs + (p - s0) * lb
      const size_t lb = bcopy ? 32 : (size_t)ldbs;
      // The next segment's B rows into L2 while this one runs, spread over its K tiles: a strip's
      // first pass over a segment otherwise waits on memory for every B tile (256 x 1,024 pairs x
      // 64 strips: 1,189-1,324 -> 1,293-1,424 GFLOP/s, bench of 2026-12-07 in docs/performance.md).
      const char *nb = (const char *)(Bs + (size_t)s1 * ldbs);
      const char *nb_end = s1 >= P ? nb : (const char *)(Bs + (size_t)(P - s1 < SEG_PAIRS ? P : s1 + SEG_PAIRS) * ldbs);
      const int kts = (M + 31) / 32 * ((pe - s0 + 15) / 16);
      const int nb_step = kts > 0 ? (int)(((size_t)(nb_end - nb) / 64 + (size_t)kts - 1) / (size_t)kts) : 0;
      for (int i0 = 0; i0 < M; i0 += 32) {
        const int mg = M - i0 < 32 ? M - i0 : 32;
        const int m0 = mg < 16 ? mg : 16, m1 = mg - m0;
        const bool two = m1 > 0;
        if (m0 != cfg0 || m1 != cfg1) { configure(m0, m1, 16); cfg0 = m0; cfg1 = m1; }
        const uint32_t *a0 = Ap + (size_t)i0 * lda, *a1 = two ? a0 + (size_t)16 * lda : a0;
        // in the last segment: C's rows of this group (the first) and of the next, a few per K tile
        const bool last = s1 >= c1 && c1 >= P;
        if (last && i0 == 0) prefetch_rows(C, ldc, 0, mg, ncols);
        int pf = last ? i0 + 32 : M;
        const int pf_end = M - i0 < 64 ? M : i0 + 64;
        if (s0 == c0) {
          _tile_zero(0);
          _tile_zero(1);
          if (two) { _tile_zero(2); _tile_zero(3); }
        } else load_group(acc, i0, two);
        int p = s0;
        for (; p < pe; p += 16) {
          K_TILE(a0 + p, a1 + p, ldab, bs + (size_t)(p - s0) * lb, lb * 4, two);
          pf = prefetch_some(C, ldc, pf, pf_end, ncols);
          for (int q = 0; q < nb_step && nb < nb_end; q++, nb += 64) prefetch_l2(nb);
        }
        if (pf < pf_end) prefetch_rows(C, ldc, pf, pf_end - pf, ncols);
        if (p < s1) { // the K tail: rem pairs, at the end of the last chunk
          memset(atail, 0, sizeof atail);
          for (int r = 0; r < mg; r++) memcpy(atail[r], a0 + (size_t)r * lda + full, (size_t)rem * sizeof(uint32_t));
          K_TILE(&atail[0][0], &atail[16][0], 64, &btail[0][0], 128, two);
        }
        if (s1 < c1 || c0 > 0) store_group(acc, i0, two);
        else store_group(sum, i0, two);
        if (s1 < c1) continue;
        if (c0 > 0) // the chunk's sum joins the chunks before it
          for (int r = i0; r < i0 + mg; r++)
            for (int j = 0; j < 32; j += 16) {
              float *sr = sum + (size_t)r * 32 + j;
              _mm512_store_ps(sr, add_nan_first(_mm512_load_ps(acc + (size_t)r * 32 + j), _mm512_load_ps(sr)));
            }
        if (c1 >= P) finish_rows(sum, i0, mg, ncols, va, bias, C, ldc);
      }
      if (s1 >= c1) break;
      s0 = s1;
    }
    if (c1 >= P) break;
  }
  _tile_release();
}
