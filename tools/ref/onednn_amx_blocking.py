#!/usr/bin/env python3
"""A model of the K blocking that oneDNN's brgemm matmul picks on AMX for torch's bf16 products.

What it models
--------------
torch 2.15 (oneDNN v3.13.3, brg_matmul:avx10_1_512_amx on this Xeon) runs torch.addmm, torch.mm,
torch.matmul and F.linear on 2-D bf16 CPU tensors as one oneDNN matmul primitive with a bf16
destination (f32 accumulation). ONEDNN_VERBOSE shows the memory descriptors torch passes:

  op      src (A, M x K)   wei (B, K x N)   post-ops   heuristic taken (this model)
  addmm   ab (plain)       ab (plain)       sum        "macro" grid search, B copied to VNNI blocks
  matmul  ab               ab               -          as addmm
  linear  ab               ba (B^T stored)  sum        "macro", small-M shortcut at M <= 32
  mmtb    ab               ba (B^T stored)  -          as linear (torch.mm(x, W.t()), F.linear
                                                       without bias: the same primitive)
  mmta    ba (A^T stored)  ab               -          "micro" search (a transposed A is not
                                                       supported by the macro heuristic)
The op is given as the flags (trans_a, trans_b, with_sum) or one of these names (OPS); the sum
post-op changes nothing in the choice.

For one such product on nthr threads the function chunk_and_split() returns

  (a) the K chunk: the K elements one brgemm kernel call accumulates in AMX tiles from zero,
      K_blk * brgemm_batch_size (the call's partial result is then added in f32 to C's f32
      buffer, or C itself); 0 when all of K is one call; and
  (b) the K split: when the heuristic sets nthr_k > 1 the K chunks (K_chunk_elems =
      K_blk * K_chunk_size * brgemm_batch_size elements each) are shared out between the nthr_k
      threads by balance211 and each thread's partial sum is reduced at the end; the list gives
      the element where each thread after the first starts ([] for no split).

Which oneDNN code it follows (read at uxlfoundation/oneDNN rls-v3.13 head ce3f4b444c, one
commit after v3.13.1; the v3.13.3 commit b38f97e is not in the mirror):
  src/cpu/x64/matmul/brgemm_matmul_utils.cpp
      init_brgemm_matmul_conf (tags, wei_k_blk = 32, wei_n_blk = 32 if the macro heuristic is
      supported else 64, use_buffer_a for a transposed A), compute_blocking_heuristic (the AMX
      branch: macro first, micro when the macro's best score is 0), init_aux_values (K_chunks).
  src/cpu/x64/matmul/amx_blocking_heuristics.cpp/.hpp
      matmul_amx_blocking_params_macro_t: is_supported, maybe_small_dims_heuristics,
      find_best_blocking (grid over nthr_to_check, b/m/k/n thread divisions),
      divs_are_acceptable, set_tmul_sizes, set_decomposition, calc_k_blk, blk_candidates,
      set_blocking_parameters (horizontal/vertical traversal, "give up on the L1"),
      l2_matrix_usage, l2_matrix_and_c_usage, bw, ratio, evaluate_single_core_blocking,
      calculate_blocking_scores (cost model with the bw_map_t bandwidth table), operator>.
      matmul_amx_blocking_params_micro_t: find_best_blocking, set_blocking_parameters,
      calculate_chunk_memory_size and the three scores.
  src/cpu/x64/matmul/brgemm_matmul.cpp
      execute: balance211(K_chunks, nthr_k) gives each K thread its chunks; compute_kernel: one
      brgemm call per K block of K_blk * brgemm_batch_size elements, plus a separate K-tail call.
  src/cpu/platform.cpp, src/cpu/x64/platform.cpp: cache sizes from CPUID leaf 4 (per core).

Float arithmetic of the cost models is done in float32 (numpy) in the C++ evaluation order so that
ties and near-ties resolve as in the library.

The rules, in words (elements of K; a "tile" is 32 elements, wei_k_blk)
-----------------------------------------------------------------------
Macro heuristic (addmm, matmul, linear; A plain):
  * linear (B^T stored) with M <= 32: if splitting N in 32-column blocks over the threads keeps at
    least 3/4 of them busy (ceil(N / rnd_up(ceil(N / nthr), 32)) >= 0.75 nthr), all of K is one
    brgemm call: one chunk, no split.
  * otherwise a grid search over every thread count nthr' <= nthr and every factorisation
    nthr' = nthr_b * nthr_m * nthr_k * nthr_n (skipping divisions that leave a thread < 32 rows or
    columns, or < 128 K elements). Per division, with m_pt = ceil(M / nthr_m) and so on:
    m_tmul = ceil(m_pt / ceil(m_pt / 16)), m_dec = min(M, 2 m_tmul), n_dec = min(N, 32);
    an L1 K block calc_k_blk(d) = 32 * ceil(t / ceil(t / L)), t = ceil(ceil(K / 32) / nthr_k) the
    tiles per K thread, L = the tiles of A (d = m_dec rows) or B (d = n_dec columns) that fit in
    5/6 of the L1 next to the C tiles: L = floor((40960 - 8 m_dec n_dec - m_dec * 64) / (64 d)).
    - horizontal traversal (chosen when m_pt >= n_pt, or vertical is impossible): if that block
      is < K and ceil(K / blk) * blk * m_dec * 2 + C tiles exceed 40960 bytes (always for GPT-2's
      shapes) oneDNN "gives up on the L1": K_blk = 32 * c, where c, the tiles per call, is the
      one among {ceil(t / g) : g = 1..t} with c >= the L1 block's tiles that maximises compute / bytes moved (m_dec x c*32 x
      n_blk per call) with the working set <= 3/4 of the L2 (1.5 MiB); the call covers K_blk.
      Otherwise K_blk = the L1 block (k_chunk_size calls of it per K chunk).
    - vertical traversal: K_blk = calc_k_blk(n_dec) (at most 15 tiles here), k_chunk_size = the
      best L2 chunk count; each call still covers K_blk only.
    Every division is scored by a roofline-like cost model (calculate_blocking_scores: L1/L2/LLC/
    DRAM bytes over the EMR bandwidth table, AMX cycles, and for nthr_k > 1 a reduction cost with
    25000 fixed cycles; score 0 when 2x a thread's f32 partial C reaches 1.5 MiB); the
    highest score wins (ties: see better_than), then for B as stored a vertical winner is
    retried as forced horizontal. The chunk is the winner's K_blk (brgemm_batch_size is 1).
Micro heuristic (mmta: A given transposed, copied to a buffer):
  * M_blk = the first of 64, 60, 56, 52, 48, 45, 42, 39, 32, 30, 28, 26 dividing M (s * r for
    r = 16..13, s = 4..2), else min(M, 64); N_blk = min(N, 64); nthr_k runs over
    1 .. min(clamp(nthr // 8, 1, 7), ceil(K / 1024)) (so 1 below 16 threads).
  * for every (n_blk, m_blk candidate, N chunk 1..4 or 6, M chunk 1..4): 32-element blocks,
    bs = ceil(ceil(K / 32) / nthr_k) blocks per call, then shrunk to fit the L2: with
    S = bytes of A + its copy + B + its copy + C + the f32 C buffer of one chunk and
    d_lo = S // 1.5 MiB, d_hi = ceil(S / 1.5 MiB): if d_lo > 0, bs becomes kc2 = ceil(bs / d_hi)
    unless kc1 = bs // d_lo divides the thread's blocks and kc2 does not (or leaves a bigger
    remainder); if 32 * bs divides K the call is one block of 32 * bs. Chunk = 32 * bs.
  * the score is (L2 fill / nthr + copied-data reuse + (nthr - 1) / nthr * thread balance) /
    (1 + 1) and the best one wins.
K split (both): with nthr_k > 1, K is cut into K_chunks = ceil(K / K_chunk_elems) chunks of
K_chunk_elems = K_blk * k_chunk_size * bs elements and thread i of nthr_k takes chunks
balance211(K_chunks, nthr_k, i) (the first K_chunks mod nthr_k threads one more). Each thread sums
its own calls in f32 (in order); the partial sums are then added in thread order,
((P0 + P1) + P2) + ..., so a thread that holds a single chunk adds as if K were not split.
K tail (K % 32 != 0; brgemm_matmul.cpp compute_kernel's K-tail call): oneDNN's K blocks are K_blk
elements from the start of each call; the last K % K_blk elements go to a brgemm call of their own
that accumulates from zero (its partial 32-element tile behaves as a tile padded with zeros: the
even / odd chains of TDPBF16PS over the elements present) and is added in f32 to the running sum
after the calls before it. Macro (bs = 1, K_blk a multiple of 32): that is simply the last chunk,
K % K_blk elements (tiles, then the partial tile) in one chain. Micro (K_blk = 32, bs > 1 tiles a
call): the partial tile at K - K % 32 is a call of its own after the last chunk's full tiles, so
the last chunk is split there (block_starts adds that start). It belongs to the last thread of a
K split. Found with random sparse columns of +-2^24, +-2^25, 1, 3, 0.5 at the chunk, split and
tail boundaries, every column equal to an f32 simulation of this order (e.g. mmta M 768 K 880
N 3072: chunks of 448, tail call at 864; 3072/3072 columns; the alternative "tail tile inside the
last chunk's chain" fails 37 of them), on 20 shapes with 1 to 16 threads, with and without a split.

Validation (tools/ref/check_onednn_amx_model.py): 1360/1360 cases of the default grid with
--lmhead (M 2..4096, GPT-2's (K, N), the lm_head's (768, 50257) and (50257, 768), and the dW
shapes; addmm/matmul/linear/mmtb/mmta; 1 2 3 4 8 threads); earlier 420/420 on 5, 6 and 16
threads, 580/580 on other shapes (K 96..4096 incl. K % 32 != 0, 1..32 threads), and all 15936
entries of the measured tables in src/kernels/matmul/matmul_bf16_chunks.c (--tables).
Small shapes (implementation(); chunk_and_split returns None for them): M * N * K <= 4096 never
reaches oneDNN (ATen's gemm); M == 1 or N == 1 is oneDNN's GEMV (brg_matmul:avx512_core_bf16); AMX
declines bf16 shapes with 2 * M_blk * LDA <= 126 bytes (brg_matmul:avx512_core_bf16 runs them; M_blk
depends on the thread count, e.g. M 3 K 31 on 3 or 4 threads). 23040/23040 cases of the --small grid
(M 2..64, N 1..128, K 16..5000, five ops, 1..4 threads) match: implementation, every block start,
every partial-sum start (probed by rows of A, so N no longer hides them) and the tail probe.
K tiles (tiles()): a brgemm call runs one TDPBF16PS per 32-element K tile from its start, the last
partial (zero-padded, "extendable K"), except under the macro heuristic with K % 32 != 0 where every
call splits into equal even tiles of at most 32 elements (skip_extendable_k: the call's length over
ceil(length / 32) is an even whole number, for K_blk and for the last call's K % K_blk) and A is not
copied inside the kernel (use_fused_copy_a: horizontal traversal, N_blk >= 3 x 32, K_blk >= 128):
then brgemm's rd_block, the largest even divisor <= 32 of the call's length, is the tile (K 300 in
one call: ten tiles of 30, where 32 + ... + 32 + 12 was modelled before; it moved 0.01% of random
bf16 outputs, and the attention's P @ V at 300 tokens took GPT-2 124M's bf16 logits to 27-51%).
Found with cancelling triples (+2^24, 1, -2^24 at random K positions of a column, rows of ones:
probe_bf16_amx_blocks.py --triples, which checks simulate() against torch), read in oneDNN's
amx_blocking_heuristics.cpp (skip_extendable_k, set_blocking_parameters) and brgemm_utils.cpp
(init_kernel_blocking: rd_block).
Batched products (batch > 1: torch.bmm and 4-D matmul, one 3-D oneDNN matmul with src and wei
"abc"): the macro grid search over b x m x k x n with the batch in its cost model, no small-dims
shortcut, and no K split (a split scores 0); the micro heuristic's batch terms likewise. Validated
with --triples on the attention's shapes (M, K in 33..500, N 64, 12 slices, 1 and 2 threads: 220 of
220 shapes) and on head size 128 at 4 and 8 threads, where the batch keeps 32-element tiles that a
2-D product of the same shape does not.
An odd K > 32 with A transposed (the micro heuristic, A copied with its K padded to whole pairs):
the even K's order, validated with --triples --ops mmta (M 64, 371, 768 x K 33, 77, 301, 333, 1127,
2049 x N 221, 768, 2304 on 1, 2 and 4 threads: 162 of 162 shapes).
Not modelled: a K > 32 not a multiple of 2 under the micro heuristic with A as stored.
"""
import numpy as np

F = np.float32

# ---- the machine, as oneDNN reads it (CPUID leaf 4; ONEDNN_VERBOSE=all's debuginfo line) ----
L1D_PER_CORE = 48 * 1024           # get_per_core_cache_size(1)
L2_PER_CORE = 2048 * 1024          # get_per_core_cache_size(2)
L2_WAYS = 16                       # get_num_ways_in_cache(2)
L2_SETS = 2048                     # get_num_sets_in_cache(2)
CACHE_LINE = 64                    # get_cache_line_size()
L1_THRESHOLD = 5 * L1D_PER_CORE // 6       # matmul_amx_blocking_params_t::L1_threshold()
L2_THRESHOLD = 3 * L2_PER_CORE // 4        # ::L2_threshold()
L2_WAYS_THRESHOLD = 3 * L2_WAYS // 4       # ::L2_ways_threshold()
PAGE_4K = 4096

# ---- data types of torch's bf16 products ----
A_DT_SZ = B_DT_SZ = GEMM_DT_SZ = 2  # bf16 src / wei (tr_a_dt_sz == tr_b_dt_sz)
C_DT_SZ = 2                         # bf16 dst
ACC_DT_SZ = 4                       # f32 accumulation
WEI_K_BLK = 32                      # get_wei_k_blk(bf16) = 16 * vnni granularity 2
K_GRANULARITY = 2                   # required_k_granularity (vnni granularity of bf16)
POSTOPS_INSTS = 0                   # postops_estimator_t: a sum post-op emits no vector code

# macro heuristic constants (amx_blocking_heuristics.hpp)
MIN_K_ELEM = 256 // GEMM_DT_SZ
MIN_MN_ELEM = 64 // C_DT_SZ
K_WRITE_BOUND_ELEM = 256 // GEMM_DT_SZ
MIN_N_WRITE_BOUND_ELEM = 256 // GEMM_DT_SZ
AVX_IPC = F(1.2)

# bw_map_t (measured on an EMR machine, per the source)
L1_LOAD_HIT_BW = F(106.41)
L1_STORE_HIT_BW = L1_LOAD_HIT_BW
L1_LOAD_MISS_BW = F(106.41 / 2.28)
L1_STORE_MISS_BW = F(106.41 / 2.85)
LLC_BW = F(6.0)
_MULTICORE_BW = [(1, F(2.28)), (2, F(0.9)), (4, F(2.39)), (8, F(2.98)), (16, F(3.31)), (32, F(4.06))]


def div_up(a, b):
    return -(-a // b)


def rnd_up(a, b):
    return div_up(a, b) * b


def is_pow2(v):
    return v > 0 and v & (v - 1) == 0


def get_bw(x):
    """bw_map_t::get_bw: linear interpolation in the multicore DRAM table, in float32."""
    xf = F(x)
    xi = int(x)
    keys = [k for k, _ in _MULTICORE_BW]
    idx = next((i for i, k in enumerate(keys) if k >= xi), len(keys))
    if idx == len(keys):
        return _MULTICORE_BW[-1][1]
    if idx == 0:
        return _MULTICORE_BW[0][1]
    x0, y0 = _MULTICORE_BW[idx - 1]
    x1, y1 = _MULTICORE_BW[idx]
    return F(y0 + F(F(F(y1 - y0) * F(xf - F(x0))) / F(x1 - x0)))


def balance211(n, team, tid):
    """oneDNN's balance211: returns (start, end) of item range for thread tid."""
    if team <= 1 or n == 0:
        return 0, n
    n1 = div_up(n, team)
    n2 = n1 - 1
    t1 = n - n2 * team
    my = n1 if tid < t1 else n2
    start = n1 * tid if tid <= t1 else t1 * n1 + (tid - t1) * n2
    return start, start + my


class Problem:
    """The parts of brgemm_matmul_conf_t that the AMX heuristics read, for one torch call."""

    def __init__(self, M, N, K, trans_a, trans_b, with_sum, nthr, batch=1):
        self.M, self.N, self.K, self.nthr = M, N, K, nthr
        self.batch = batch  # slices of a 3-D product (torch.bmm, the attention's per-head products)
        self.transposed_A = bool(trans_a)
        self.transposed_B = bool(trans_b)
        # A sum post-op (bias: addmm, F.linear with bias) emits no vector code in the AMX kernels
        # (postops_estimator_t) and no heuristic reads it otherwise: no effect on the blocking
        # (validated: linear vs mmtb, addmm vs matmul).
        self.with_sum = bool(with_sum)
        # B is never in a blocked (VNNI) layout when torch passes it, so AMX copies it.
        self.use_buffer_b = True
        # init_brgemm_matmul_conf: is_copy_a_required for a transposed A.
        self.use_buffer_a = self.transposed_A
        # macro is_supported: plain (ab) src only; everything else holds for bf16 torch calls.
        self.macro_supported = not self.transposed_A
        self.wei_n_blk = 32 if self.macro_supported else 64  # get_default_n_block

    def lda_big_pow2(self):
        return (not self.transposed_A) and is_pow2(self.K) and self.K >= 8192 // A_DT_SZ


# ============================================================================ macro heuristic
class Macro:
    """matmul_amx_blocking_params_macro_t: mutable state, mirrors the C++ object."""

    def __init__(self, p):
        self.p = p
        self.M, self.N, self.K, self.batch = p.M, p.N, p.K, p.batch
        self.nthr = p.nthr                       # bgmmc.nthr (peak in the score)
        self.nthr_m_ = self.nthr_n_ = self.nthr_k_ = self.nthr_b_ = 1
        self.nthr_ = p.nthr
        self.m_per_thread = self.k_per_thread = self.n_per_thread = self.b_per_thread = 0
        self.m_tmul = self.n_tmul = self.k_tmul = 0
        self.m_decomposition = self.n_decomposition = 32
        self.is_horizontal = False
        self.is_a_nt_ = True
        self.k_blk_ = p.K   # unused before set_blocking_parameters
        self.k_chunk_size_ = 1
        self.m_chunk_size_ = 1
        self.n_chunk_size_ = 1
        self.m_blk_ = self.n_blk_ = 0
        self.brgemm_batch_size_ = 1
        self.efficiency_score_ = F(0)
        self.small_dims = False
        self.use_fused_copy_a_ = False

    def copy(self):
        c = Macro.__new__(Macro)
        c.__dict__.update(self.__dict__)
        return c

    # --- helpers ---
    def set_core_divs(self, b, m, k, n):
        self.nthr_b_, self.nthr_m_, self.nthr_k_, self.nthr_n_ = b, m, k, n
        self.m_per_thread = div_up(self.M, m)
        self.k_per_thread = div_up(self.K, k)
        self.n_per_thread = div_up(self.N, n)
        self.b_per_thread = div_up(self.batch, b)

    def set_tmul_sizes(self):
        tiles = div_up(self.m_per_thread, 16)
        self.m_tmul = div_up(self.m_per_thread, tiles)
        self.n_tmul = 16
        self.k_tmul = min(WEI_K_BLK, self.K)

    def set_decomposition(self):
        self.m_decomposition = min(self.M, 2 * self.m_tmul)
        self.n_decomposition = min(self.N, 2 * self.n_tmul)

    def divs_are_acceptable(self):
        bad_m = rnd_up(self.m_per_thread, self.m_tmul) < MIN_MN_ELEM and self.nthr_m_ > 1
        bad_k = self.k_per_thread < MIN_K_ELEM and self.nthr_k_ > 1
        if self.nthr_k_ == 1 and self.k_per_thread < K_WRITE_BOUND_ELEM:
            bad_n = rnd_up(self.n_per_thread, self.n_tmul) < MIN_N_WRITE_BOUND_ELEM and self.nthr_n_ > 1
        else:
            bad_n = rnd_up(self.n_per_thread, self.n_tmul) < MIN_MN_ELEM and self.nthr_n_ > 1
        bad_b = self.nthr_b_ > self.batch
        return not (bad_m or bad_k or bad_n or bad_b)

    @staticmethod
    def blk_candidates(dim_per_thread, decomposition):
        inner = div_up(dim_per_thread, decomposition)
        return sorted({div_up(inner, g) for g in range(1, inner + 1)})

    def calc_k_blk(self, l1_dim):
        c_tiles = self.m_decomposition * self.n_decomposition * ACC_DT_SZ
        d_tiles = self.m_decomposition * rnd_up(self.n_decomposition * C_DT_SZ, 64)
        avail = (L1_THRESHOLD - (c_tiles * 2 + d_tiles)) % (1 << 64)  # size_t
        largest_k = avail // (l1_dim * GEMM_DT_SZ)
        largest_k_tiles = largest_k // self.k_tmul
        k_tiles = div_up(self.K, self.k_tmul)
        kpt_tiles = div_up(k_tiles, self.nthr_k_)
        nblocks = div_up(kpt_tiles, largest_k_tiles)
        return min(div_up(kpt_tiles, nblocks) * self.k_tmul, self.K)

    def l2_matrix_usage(self, k_chunk, m_or_n_blk, k_blk, horiz, force=False):
        dec = self.m_decomposition if horiz else self.n_decomposition
        kk = min(k_blk * k_chunk, self.k_per_thread)
        l1 = 2 * dec * kk * GEMM_DT_SZ
        l2 = m_or_n_blk * kk * GEMM_DT_SZ
        if force:
            l2 += m_or_n_blk * k_blk * k_chunk * (B_DT_SZ if horiz else A_DT_SZ)
        if horiz:
            c_post = 2 * self.m_decomposition * rnd_up(m_or_n_blk * C_DT_SZ, 64)
        else:
            c_post = 2 * rnd_up(self.n_decomposition * C_DT_SZ, 64) * m_or_n_blk
        if k_blk == self.K:  # (acc_dt == dst_dt never holds here: f32 vs bf16)
            c_tmp = 2 * self.m_decomposition * self.n_decomposition * ACC_DT_SZ
        else:
            c_tmp = 2 * dec * m_or_n_blk * ACC_DT_SZ
        return l1 + l2 + c_tmp + c_post

    def l2_matrix_and_c_usage(self, k_chunk, m_or_n_blk, k_blk, horiz):
        per = self.m_per_thread if horiz else self.n_per_thread
        kk = min(k_blk * k_chunk, self.k_per_thread)
        return 2 * per * kk * GEMM_DT_SZ + 2 * m_or_n_blk * kk * GEMM_DT_SZ + per * m_or_n_blk * ACC_DT_SZ

    def bw(self, m_blk, k_chunk, k_blk, n_blk, horiz):
        kk = min(k_blk * k_chunk, self.k_per_thread)
        a_bw = m_blk * kk * GEMM_DT_SZ
        b_bw = n_blk * kk * GEMM_DT_SZ
        fits = self.l2_matrix_and_c_usage(k_chunk, n_blk if horiz else m_blk, k_blk, horiz) < L2_THRESHOLD
        if (fits or kk == self.K) and self.nthr_k_ == 1:
            c_bw = 0
        else:
            c_bw = m_blk * n_blk * ACC_DT_SZ
        return a_bw + b_bw + c_bw

    def ratio(self, m_blk, k_chunk, k_blk, n_blk, horiz):
        comp = m_blk * min(k_blk * k_chunk, self.k_per_thread) * n_blk
        return F(F(comp) / F(self.bw(m_blk, k_chunk, k_blk, n_blk, horiz)))

    def evaluate_single_core_blocking(self, k_chunk, m_or_n_blk, k_blk, horiz, force=False):
        if self.l2_matrix_usage(k_chunk, m_or_n_blk, k_blk, horiz, force) <= L2_THRESHOLD:
            if horiz:
                return self.ratio(self.m_decomposition, k_chunk, k_blk, m_or_n_blk, horiz)
            return self.ratio(m_or_n_blk, k_chunk, k_blk, self.n_decomposition, horiz)
        return F(0)

    # --- set_blocking_parameters ---
    def set_blocking_parameters(self, force_horizontal=False, force_b_to_l2=False):
        m_cands = self.blk_candidates(self.m_per_thread, self.m_decomposition)
        n_cands = self.blk_candidates(self.n_per_thread, self.n_decomposition)
        st = dict(best_k_h=0, best_n_h=0, best_m_v=0, best_k_v=0, best_score_h=F(0), best_score_v=F(0),
                  h_np=False, v_np=force_horizontal)
        M, N, K = self.M, self.N, self.K

        def calc_horizontal(k_blk_h, min_k_chunk=0):
            if rnd_up(self.m_per_thread, self.m_decomposition) * (self.nthr_m_ - 1) >= M:
                st["h_np"] = True
            elif rnd_up(self.k_per_thread, k_blk_h) * (self.nthr_k_ - 1) >= K:
                st["h_np"] = True
            else:
                k_cands = self.blk_candidates(self.k_per_thread, k_blk_h)
                st["best_n_h"] = 0
                for n in reversed(n_cands):
                    for kc in reversed(k_cands):
                        s = self.evaluate_single_core_blocking(kc, n * self.n_decomposition, k_blk_h, True,
                                                               force_b_to_l2)
                        if s > st["best_score_h"] and kc >= min_k_chunk:
                            st["best_score_h"], st["best_k_h"], st["best_n_h"] = s, kc, n
                if st["best_n_h"] == 0:
                    st["h_np"] = True
                    return
                if rnd_up(self.n_per_thread, st["best_n_h"] * self.n_decomposition) * (self.nthr_n_ - 1) >= N:
                    st["h_np"] = True
                if rnd_up(self.k_per_thread, st["best_k_h"] * k_blk_h) * (self.nthr_k_ - 1) >= K:
                    st["h_np"] = True

        k_blk_h = self.calc_k_blk(self.m_decomposition)
        calc_horizontal(k_blk_h)

        def calc_vertical(k_blk_v, min_k_chunk=0):
            if rnd_up(self.n_per_thread, self.n_decomposition) * (self.nthr_n_ - 1) >= N:
                st["v_np"] = True
            elif rnd_up(self.k_per_thread, k_blk_v) * (self.nthr_k_ - 1) >= K:
                st["v_np"] = True
            else:
                k_cands = self.blk_candidates(self.k_per_thread, k_blk_v)
                for m in reversed(m_cands):
                    for kc in reversed(k_cands):
                        s = self.evaluate_single_core_blocking(kc, m * self.m_decomposition, k_blk_v, False)
                        if s > st["best_score_v"] and kc >= min_k_chunk:
                            st["best_score_v"], st["best_k_v"], st["best_m_v"] = s, kc, m
                # (best_m_v is not initialised in the C++; 0 here means "none found")
                if st["best_m_v"] == 0:
                    st["v_np"] = True
                    return
                bm, bk = st["best_m_v"], st["best_k_v"]
                if rnd_up(self.m_per_thread, bm * self.m_decomposition) * (self.nthr_m_ - 1) >= M:
                    st["v_np"] = True
                if rnd_up(self.k_per_thread, bk * k_blk_v) * (self.nthr_k_ - 1) >= K:
                    st["v_np"] = True
                l2_util_v = 0
                if not st["v_np"]:
                    l2_util_v = self.l2_matrix_and_c_usage(bk, bm * self.m_decomposition, k_blk_v, False)
                    if l2_util_v > L2_THRESHOLD:
                        l2_util_v = self.l2_matrix_usage(bk, bm * self.m_decomposition, k_blk_v, False)
                repeat_k = div_up(K, k_blk_v * bk) != 1
                crit = div_up(K, k_blk_v * bk) != self.nthr_k_ or l2_util_v * self.nthr_k_ >= L2_THRESHOLD
                if repeat_k and crit:
                    st["v_np"] = True
                l2_line = L2_SETS * CACHE_LINE
                stride = N * C_DT_SZ % PAGE_4K
                if stride == 0:
                    stride = PAGE_4K
                if l2_line % stride == 0:
                    ways = div_up(stride * self.m_per_thread, l2_line)
                    if ways >= L2_WAYS_THRESHOLD:
                        st["v_np"] = True

        k_blk_v = self.calc_k_blk(self.n_decomposition)
        calc_vertical(k_blk_v)

        if st["v_np"] and st["h_np"]:
            return False

        # is_horizontal_selected
        if st["h_np"]:
            horiz = False
        elif st["v_np"]:
            horiz = True
        elif self.m_per_thread < self.m_tmul * 2:
            horiz = True
        elif self.n_per_thread < self.n_tmul * 2:
            horiz = False
        else:
            horiz = self.m_per_thread >= self.n_per_thread
        self.is_horizontal = horiz

        def postops_bound(k_blk):
            return F(POSTOPS_INSTS) / AVX_IPC > div_up(k_blk, self.k_tmul)

        md, nd = self.m_decomposition, self.n_decomposition
        if horiz:
            l1_eff = div_up(K, k_blk_h)
            a_l1 = k_blk_h * md * GEMM_DT_SZ
            c_l1 = nd * md * ACC_DT_SZ
            d_post = md * rnd_up(nd * C_DT_SZ, 64)
            self.is_a_nt_ = False
            l1_set_issues = k_blk_h < K and l1_eff * a_l1 + 2 * c_l1 + d_post > L1_THRESHOLD
            self.gave_up_l1 = False
            if l1_set_issues or postops_bound(k_blk_h):
                # "give up on the L1": K blocks of one 32-element tile, chunked to fit the L2
                st["best_score_h"] = F(0)
                calc_horizontal(WEI_K_BLK, k_blk_h // WEI_K_BLK)
                k_blk_h = min(WEI_K_BLK * st["best_k_h"], K)
                st["best_k_h"] = 1
                self.is_a_nt_ = True
                self.gave_up_l1 = True
            a_fits = k_blk_h * md * GEMM_DT_SZ + 2 * c_l1 + d_post <= L1_THRESHOLD
            write_bound = self.nthr_k_ == 1 and self.k_per_thread < K_WRITE_BOUND_ELEM
            if a_fits and not write_bound:
                self.is_a_nt_ = False
            self.k_blk_ = k_blk_h
            self.k_chunk_size_ = st["best_k_h"]
            self.n_blk_ = min(st["best_n_h"] * nd, N)
            self.n_chunk_size_ = 1
            self.m_blk_ = md
            self.m_chunk_size_ = div_up(self.m_per_thread, self.m_blk_)
            # A copied inside the kernel ("fused copy A") when K is not a multiple of the tile and
            # A is reused over at least three 32-column blocks
            self.use_fused_copy_a_ = K % WEI_K_BLK != 0 and self.n_blk_ >= nd * 3 and self.k_blk_ >= 128
        else:
            self.gave_up_l1 = False
            self.k_blk_ = k_blk_v
            self.k_chunk_size_ = st["best_k_v"]
            self.n_blk_ = nd
            self.n_chunk_size_ = div_up(self.n_per_thread, self.n_blk_)
            self.m_blk_ = min(st["best_m_v"] * md, M)
            self.m_chunk_size_ = 1
            self.use_fused_copy_a_ = False
            self.is_a_nt_ = True
        self.brgemm_batch_size_ = 1
        self.efficiency_score_ = self.calculate_blocking_scores()
        return True

    def b_transform_fits_in_l2(self):
        return self.l2_matrix_usage(self.k_chunk_size_, self.n_blk_, self.k_blk_, True, True) < L2_THRESHOLD

    def calculate_blocking_scores(self):
        p = self.p
        horiz = self.is_horizontal
        s1_b_h = horiz and p.use_buffer_b
        sm_b_v = (not horiz) and p.use_buffer_b
        s1_b_in_mlc_h = s1_b_h and self.b_transform_fits_in_l2()
        mpt, kpt, npt = self.m_per_thread, self.k_per_thread, self.n_per_thread
        md, nd = self.m_decomposition, self.n_decomposition
        a_size = mpt * kpt * GEMM_DT_SZ
        b_size = npt * kpt * GEMM_DT_SZ
        d_size = mpt * npt * C_DT_SZ
        cycles_per_tmul = self.m_tmul * 64 * 16 // 1024
        c_sz = C_DT_SZ if self.nthr_k_ == 1 else ACC_DT_SZ
        if horiz:
            strip_dst = md * npt * c_sz
            tmuls = F(md * kpt * npt // (self.m_tmul * self.k_tmul * self.n_tmul))
            num_strip = F(div_up(mpt, md))
            nt_miss = F(b_size)
            l1_reuse = F(div_up(self.n_blk_, nd))
            s1_shared = F(b_size)
            s1_private = F(md * kpt * GEMM_DT_SZ + strip_dst)
            s1_coef = F(self.nthr_m_)
            sm_shared = F(md * kpt * GEMM_DT_SZ)
            sm_private = F(strip_dst)
            sm_coef = F(max(1, self.nthr_n_))
        else:
            strip_dst = nd * mpt * c_sz
            tmuls = F(nd * kpt * mpt // (self.m_tmul * self.k_tmul * self.n_tmul))
            num_strip = F(div_up(npt, nd))
            nt_miss = F(a_size)
            l1_reuse = F(div_up(self.m_blk_, md))
            s1_shared = F(a_size)
            s1_private = F(nd * kpt * GEMM_DT_SZ + strip_dst)
            s1_coef = F(self.nthr_n_)
            sm_shared = F(nd * kpt * GEMM_DT_SZ)
            sm_private = F(strip_dst)
            sm_coef = F(max(1, self.nthr_m_))
        tm_miss = F(sm_shared * F(2))
        tm_hit = F(sm_shared * F(l1_reuse - F(1)))
        c_elem = F(self.m_blk_ * self.n_blk_)
        nblocks_n = div_up(self.n_blk_, nd)
        c_pw_miss = F(self.m_blk_ * nblocks_n * rnd_up(nd * C_DT_SZ, 64))
        c_pw_total = F(self.m_blk_ * nblocks_n * div_up(nd, 16) * 64)
        c_pw_hit = F(c_pw_total - c_pw_miss)
        c_read_tmp = F(c_elem * F(ACC_DT_SZ))
        bw_tmp = L1_LOAD_HIT_BW if self.k_blk_ == self.K else L1_STORE_MISS_BW
        c_tmp_l1 = F(F(F(F(ACC_DT_SZ) * c_elem) * F(self.k_chunk_size_)) / bw_tmp)
        c_l1 = F(F(F(F(c_pw_miss / L1_STORE_MISS_BW) + F(c_pw_hit / L1_STORE_HIT_BW))
                   + F(c_read_tmp / L1_STORE_HIT_BW)) + c_tmp_l1)
        l1_cycles = F(F(F(F(tm_miss / L1_LOAD_MISS_BW) + F(tm_hit / L1_LOAD_HIT_BW))
                        + F(nt_miss / L1_LOAD_MISS_BW)) + c_l1)
        b_tr_h = F(s1_shared / get_bw(int(s1_coef))) if s1_b_h else F(0)
        b_tr_v = F(sm_shared / get_bw(int(sm_coef))) if sm_b_v else F(0)
        if sm_b_v:
            sm_dram = F(sm_private / get_bw(1))
            sm_llc = F(sm_private / LLC_BW)
        else:
            sm_dram = F(F(sm_shared / get_bw(int(sm_coef))) + F(sm_private / get_bw(1)))
            sm_llc = F(F(sm_private + sm_shared) / LLC_BW)
        strip_tmul = F(tmuls * F(cycles_per_tmul))
        strip_avx = F(F(F(POSTOPS_INSTS) * F(md * div_up(npt, self.n_tmul) if horiz
                                             else mpt * div_up(nd, self.n_tmul))) / AVX_IPC)
        sm_cycles = F(b_tr_v + max(sm_dram, sm_llc, l1_cycles, strip_tmul, strip_avx))
        if not s1_b_h:
            s1_cycles = F(F(s1_shared / get_bw(int(s1_coef))) + F(s1_private / get_bw(1)))
        elif s1_b_in_mlc_h:
            s1_cycles = sm_cycles
        else:
            s1_cycles = F(s1_shared / LLC_BW)
        gemm_cycles = F(F(b_tr_h + s1_cycles) + F(F(num_strip - F(1)) * sm_cycles))
        if self.nthr_k_ != 1:
            c_per_core = mpt * npt * ACC_DT_SZ
            if c_per_core * 2 < L2_THRESHOLD and self.batch == 1:
                rd_bytes = F(self.M * rnd_up(self.N, 16) * ACC_DT_SZ * (self.nthr_k_ - 1)
                             // (self.nthr_m_ * self.nthr_n_))
                if a_size + b_size + d_size < L2_THRESHOLD:
                    rd = F(rd_bytes / get_bw(2))
                else:
                    rd = F(rd_bytes / LLC_BW)
                wr_bytes = F(self.M * self.N * C_DT_SZ // (self.nthr_m_ * self.nthr_n_))
                wr = F(wr_bytes / get_bw(1))
                red = F(F(rd + wr) + F(25000))
            else:
                return F(0)
        else:
            red = F(0)
        total_macs = F(self.M * self.K * self.N * self.batch)
        total_cycles = F(F(gemm_cycles + red) * F(self.b_per_thread))
        peak = F((1024 // GEMM_DT_SZ) * self.nthr)
        return F(F(total_macs / peak) / total_cycles)

    def better_than(self, other):
        """operator> of the C++ class."""
        if other.efficiency_score_ > self.efficiency_score_:
            return False
        if other.efficiency_score_ < self.efficiency_score_:
            return True
        if not self.is_horizontal and other.is_horizontal:
            if self.m_per_thread * self.K + self.m_per_thread * self.N < L2_THRESHOLD and other.is_a_nt_:
                return True
            return False
        if self.is_horizontal and not other.is_horizontal:
            if other.m_per_thread * self.K + other.m_per_thread * self.N < L2_THRESHOLD and self.is_a_nt_:
                return False
            return True
        return self.m_chunk_size_ * self.n_chunk_size_ > other.m_chunk_size_ * other.n_chunk_size_


def macro_small_dims(p):
    """maybe_small_dims_heuristics for the cases torch reaches: returns the configuration or None.
    Each branch that applies but leaves too many threads idle (fewer than 3/4 of them busy) ends
    the shortcut: the grid search decides then (the later branches are not tried)."""
    b_not_flat = (not p.use_buffer_b) or p.transposed_B
    if p.M <= 32 and b_not_flat and p.batch == 1:
        n_dec = min(p.N, p.wei_n_blk)
        n_per_core = rnd_up(div_up(p.N, p.nthr), n_dec)
        nthr_n = div_up(p.N, n_per_core)
        if nthr_n < 0.75 * p.nthr:
            return None
        # use_buffer_b computes a k_chunk_size, but set_common() then sets k_blk = K, chunk 1
        return dict(k_blk=p.K, k_chunk_size=1, bs=1, nthr_k=1, m_blk=p.M, lda=p.K,
                    fused_copy_a=False, path="macro small-M (M<=32, B^T)")
    if p.K <= WEI_K_BLK and p.batch == 1:
        m_pc = div_up(p.M, p.nthr)
        nthr_m = div_up(p.M, m_pc)
        if nthr_m < 0.75 * p.nthr:
            return None
        m_pt = div_up(p.M, nthr_m)                      # set_core_divs, then set_tmul_sizes
        m_tmul = div_up(m_pt, div_up(m_pt, 16))
        m_dec = min(p.M, 2 * m_tmul)                    # set_decomposition
        return dict(k_blk=p.K, k_chunk_size=1, bs=1, nthr_k=1, m_blk=m_dec, lda=p.K, fused_copy_a=False, path="macro small-K")
    if p.N <= 32 and p.batch == 1:
        m_pc = div_up(p.M, p.nthr)
        m_dec = div_up(m_pc, div_up(m_pc, 32))
        nthr_m = div_up(p.M, rnd_up(m_pc, m_dec))
        if nthr_m < 0.75 * p.nthr:
            return None
        # a k_chunk_size is computed from the L2, but set_common() then sets k_blk = K, chunk 1
        return dict(k_blk=p.K, k_chunk_size=1, bs=1, nthr_k=1, m_blk=m_dec, lda=p.K, fused_copy_a=False, path="macro small-N")
    return None


def macro_find_best(p):
    sd = macro_small_dims(p)
    if sd is not None:
        return sd
    best = Macro(p)
    cur = Macro(p)
    for nthr_to_check in range(p.nthr, 0, -1):
        cur.nthr_ = nthr_to_check
        for b_div in range(1, nthr_to_check + 1):
            if nthr_to_check % b_div:
                continue
            for m_div in range(1, nthr_to_check // b_div + 1):
                if (nthr_to_check // b_div) % m_div:
                    continue
                rest = nthr_to_check // b_div // m_div
                for k_div in range(1, rest + 1):
                    if rest % k_div:
                        continue
                    n_div = rest // k_div
                    cur.set_core_divs(b_div, m_div, k_div, n_div)
                    cur.set_tmul_sizes()
                    cur.set_decomposition()
                    if cur.divs_are_acceptable() and cur.set_blocking_parameters():
                        if cur.better_than(best):
                            best = cur.copy()
    if p.use_buffer_b and not p.transposed_B and not best.is_horizontal:
        # forced horizontal retries with best's thread divisions; tmul sizes / decomposition are
        # left over from the last grid point (1 thread, 1x1x1x1) as in the C++.
        cur.nthr_ = best.nthr_b_ * best.nthr_m_ * best.nthr_n_ * best.nthr_k_
        cur.set_core_divs(best.nthr_b_, best.nthr_m_, best.nthr_k_, best.nthr_n_)
        if cur.set_blocking_parameters(True) and cur.better_than(best):
            best = cur.copy()
        if cur.set_blocking_parameters(True, True) and cur.better_than(best):
            best = cur.copy()
    if best.efficiency_score_ == 0:
        return None
    return dict(k_blk=best.k_blk_, k_chunk_size=best.k_chunk_size_, bs=1, nthr_k=best.nthr_k_,
                m_blk=best.m_blk_, lda=p.K, fused_copy_a=best.use_fused_copy_a_,
                path=("macro %s%s nthr %d (b%d m%d k%d n%d)" % (
                    "horizontal" if best.is_horizontal else "vertical",
                    " gave-up-L1" if getattr(best, "gave_up_l1", False) else "", best.nthr_,
                    best.nthr_b_, best.nthr_m_, best.nthr_k_, best.nthr_n_)),
                obj=best)


# ============================================================================ micro heuristic
class Micro:
    """matmul_amx_blocking_params_micro_t."""

    def __init__(self, p, M_blk, N_blk, K_blk, bs):
        self.p = p
        self.M, self.N, self.K, self.batch, self.nthr = p.M, p.N, p.K, p.batch, p.nthr
        self.nthr_k_ = 1
        self.nthr_mnb_ = p.nthr
        self.k_blk_, self.brgemm_batch_size_, self.k_chunk_size_ = K_blk, bs, 1
        self.m_blk_, self.n_blk_ = M_blk, N_blk
        self.m_chunk_size_ = self.n_chunk_size_ = 1
        self.m_chunk_elems_, self.n_chunk_elems_ = M_blk, N_blk
        self.k_chunk_elems_ = K_blk * bs
        self.need_buf_a_ = p.use_buffer_a
        self.need_buf_c_ = False
        self.extendable_k_ = False
        self.current_lda_ = 0
        self.blocking_chunk_mem_size_ = 0
        self.efficiency_score_ = F(0)

    def copy(self):
        c = Micro.__new__(Micro)
        c.__dict__.update(self.__dict__)
        return c

    def get_actual_lda(self):
        if not self.need_buf_a_:
            return self.K  # plain A: the stride of its rows
        lda = rnd_up(self.k_blk_, 64 // A_DT_SZ)
        if lda >= 512 and is_pow2(lda):
            lda += 64 // A_DT_SZ
        return lda

    def is_buffer_c_required(self):
        if self.nthr_k_ > 1 and self.K > self.k_chunk_elems_:
            return True
        return self.K > self.k_chunk_elems_ or self.K % self.k_blk_ > 0  # acc f32 != dst bf16

    def calculate_chunk_memory_size(self):
        self.k_chunk_elems_ = self.k_blk_ * self.k_chunk_size_ * self.brgemm_batch_size_
        self.current_lda_ = self.get_actual_lda()
        self.need_buf_c_ = self.is_buffer_c_required()
        a = A_DT_SZ * self.k_chunk_elems_ * self.m_chunk_elems_
        a_buf = GEMM_DT_SZ * self.current_lda_ * self.brgemm_batch_size_ * self.m_chunk_elems_ \
            if self.need_buf_a_ else 0
        b = B_DT_SZ * self.k_chunk_elems_ * self.n_chunk_elems_
        b_buf = GEMM_DT_SZ * self.n_blk_ * self.k_chunk_elems_ if self.p.use_buffer_b else 0
        c = C_DT_SZ * self.m_chunk_elems_ * self.n_chunk_elems_
        c_buf = ACC_DT_SZ * self.m_chunk_elems_ * self.n_chunk_elems_ if self.need_buf_c_ else 0
        return a + a_buf + b + b_buf + c + c_buf

    def set_blocking_parameters(self, nthr_k, n_blk, n_ch, m_blk, m_ch):
        K = self.K
        self.nthr_k_ = max(1, nthr_k)
        self.nthr_mnb_ = self.nthr // self.nthr_k_
        self.n_blk_, self.n_chunk_size_, self.m_blk_, self.m_chunk_size_ = n_blk, n_ch, m_blk, m_ch
        if 0 in (n_blk, n_ch, m_blk, m_ch):
            self.k_blk_ = self.k_chunk_size_ = self.k_chunk_elems_ = self.brgemm_batch_size_ = 0
            self.efficiency_score_ = F(0)
            return
        self.n_chunk_elems_ = n_blk * n_ch
        self.m_chunk_elems_ = m_blk * m_ch
        if K < WEI_K_BLK:
            self.k_blk_ = rnd_up(K, K_GRANULARITY)
            self.brgemm_batch_size_ = 1
        else:
            k_per_thr = div_up(K, self.nthr_k_)
            self.k_blk_ = min(rnd_up(k_per_thr, K_GRANULARITY), WEI_K_BLK)
            num_k_blk = div_up(K, self.k_blk_)
            nkpt = div_up(num_k_blk, self.nthr_k_)
            self.brgemm_batch_size_ = nkpt
            chunk_sz = self.calculate_chunk_memory_size()
            div_min = chunk_sz // L2_THRESHOLD
            div_max = div_up(chunk_sz, L2_THRESHOLD)
            thr = 2 if self.p.lda_big_pow2() else 0
            if div_min > thr and self.brgemm_batch_size_ > 1:
                kc1 = max(self.brgemm_batch_size_ // div_min, 1)
                kc2 = div_up(self.brgemm_batch_size_, div_max)
                t1, t2 = nkpt % kc1, nkpt % kc2
                self.brgemm_batch_size_ = kc2 if ((not (t1 == 0 or t2 < t1)) or t2 == 0) else kc1
            self.k_chunk_elems_ = self.k_blk_ * self.brgemm_batch_size_ * self.k_chunk_size_
            brg_k = self.k_blk_ * self.brgemm_batch_size_
            k_tail = K % self.k_blk_
            self.extendable_k_ = (K % WEI_K_BLK != 0 and brg_k > WEI_K_BLK and not self.p.use_buffer_a
                                  and self.current_lda_ == K)
            if self.extendable_k_:
                self.k_blk_ = K if brg_k >= K else brg_k
                self.k_chunk_size_ = 1
                self.brgemm_batch_size_ = 1
            elif k_tail == 0 and K % (self.k_blk_ * self.brgemm_batch_size_) == 0:
                self.k_blk_ = brg_k
                self.brgemm_batch_size_ = 1
            elif self.nthr_k_ == 1 and K == self.k_blk_ * self.brgemm_batch_size_ + k_tail:
                self.k_blk_ = brg_k
                self.brgemm_batch_size_ = 2
        self.need_buf_a_ = self.p.use_buffer_a or (not self.extendable_k_ and K % K_GRANULARITY != 0)
        self.blocking_chunk_mem_size_ = self.calculate_chunk_memory_size()
        self.efficiency_score_ = self.calculate_blocking_scores()

    def thread_balance(self):
        M, N = self.M, self.N
        nMc = div_up(M, self.m_chunk_elems_)
        nNc = div_up(N, self.n_chunk_elems_)
        mnb = F(F(F(F(F(self.batch) * F(F(M) / F(self.m_chunk_elems_))) * F(F(N) / F(self.n_chunk_elems_)))
                  / F(rnd_up(self.batch * nMc * nNc, self.nthr_mnb_))) * F(self.nthr_mnb_))
        kps = F(1)
        if self.nthr_k_ > 1:
            nKc = div_up(self.K, self.k_chunk_elems_)
            kps = F(F(F(F(0.8) * F(F(self.K) / F(self.k_chunk_elems_))) / F(rnd_up(nKc, self.nthr_k_)))
                    * F(self.nthr_k_))
        return F(F(mnb * kps) / F(self.nthr))

    def reuse(self):
        dM = min(self.M, 64 * 4)
        dN = min(self.N, 64 * (4 if self.need_buf_a_ else 1))
        cM = min(F(F(self.m_chunk_elems_) / F(dM)), F(1))
        cN = min(F(F(self.n_chunk_elems_) / F(dN)), F(1))
        return F(F(0.5) * F(cM + cN))

    def l2_util(self):
        rel = F(abs(F(F(L2_THRESHOLD) - F(self.blocking_chunk_mem_size_)))
                / F(max(L2_THRESHOLD, self.blocking_chunk_mem_size_)))
        return F(F(1) - rel)

    def calculate_blocking_scores(self):
        if 0 in (self.n_blk_, self.n_chunk_size_, self.m_blk_, self.m_chunk_size_, self.k_blk_,
                 self.brgemm_batch_size_):
            return F(0)
        nc = F(min(self.nthr, 100))
        reuse_f = F(1)
        bal = F(F(nc - F(1)) / nc)
        cache = F(F(1) / nc)
        s = F(F(cache * self.l2_util()) + F(reuse_f * self.reuse()))
        if bal > 0:
            s = F(s + F(bal * self.thread_balance()))
        return F(s / F(F(reuse_f + bal) + cache))


def micro_find_best(p):
    M, N, K = p.M, p.N, p.K
    # AMX branch of compute_blocking_heuristic before the micro search
    def m_blk_candidate():
        for r in range(16, 12, -1):
            for s in range(4, 1, -1):
                if M % (s * r) == 0:
                    return s * r
        return min(M, 64)
    M_blk = m_blk_candidate()
    N_blk = min(p.wei_n_blk, N)
    fixed_tail = K % WEI_K_BLK > 0 and K > WEI_K_BLK
    K_blk = rnd_up(K, K_GRANULARITY) if K < WEI_K_BLK else (WEI_K_BLK if fixed_tail else K)
    bs = max(K // K_blk, 1)
    best = Micro(p, M_blk, N_blk, K_blk, bs)
    cur = Micro(p, M_blk, N_blk, K_blk, bs)
    max_k_par = div_up(K, 1024)
    max_nthr_k = min(max(1, min(7, p.nthr // 8)), max_k_par) if p.batch == 1 else 1
    for nthr_k in range(1, max_nthr_k + 1):
        nthr_bmn = p.nthr // nthr_k
        num_M_blk, num_N_blk = div_up(M, M_blk), div_up(N, N_blk)
        kpw = min(max_k_par, nthr_k)
        npw = p.batch * num_M_blk * num_N_blk * kpw
        lot2 = npw > 16 * p.nthr
        low_par = npw < 1.5 * p.nthr
        min_M_blk = div_up(M_blk, 2) if (low_par and M_blk > 32) else M_blk
        # min_N_blk would drop to 32 at low parallelism, but not when n_blk is fixed, i.e. when B's
        # layout is given (not format "any") and blocked bf16 layouts exist: always so for torch.
        min_N_blk = N_blk
        dM = min(4, num_M_blk)
        dN = min(6 if lot2 else 4, num_N_blk)
        inserted = []
        m = M_blk
        while m >= min_M_blk:
            inserted.append(m)
            m = div_up(m, 2) if m > 1 else m - 1
        if M > 16:
            hi = min((M // 16) * 16, 64)
            lo = rnd_up(min_M_blk, 16)
            m = hi
            while m >= lo:
                inserted.append(m)
                m -= 16
        # The C++ keeps these in a std::unordered_set; its iteration order only matters for exact
        # score ties, and insertion, reversed or sorted order give the same K blocking on every
        # shape tried (3413 mmta cases), so insertion order is used.
        mcands = list(dict.fromkeys(inserted))
        found = False
        n_blk = N_blk
        while n_blk >= min_N_blk:
            for m_blk in mcands:
                for n_ch in range(dN, 0, -1):
                    for m_ch in range(dM, 0, -1):
                        cur.set_blocking_parameters(nthr_k, n_blk, n_ch, m_blk, m_ch)
                        work = p.batch * div_up(M, m_blk * m_ch) * div_up(N, n_blk * n_ch)
                        skip = work < nthr_bmn * 3 and work % nthr_bmn != 0 and max_nthr_k == 1
                        if skip:
                            continue
                        if cur.efficiency_score_ > best.efficiency_score_:
                            best = cur.copy()
                            found = True
            n_blk -= 16
        if not found:
            cur.set_blocking_parameters(nthr_k, min_N_blk, 1, min_M_blk, 1)
            if cur.efficiency_score_ > best.efficiency_score_:
                best = cur.copy()
    return dict(k_blk=best.k_blk_, k_chunk_size=best.k_chunk_size_, bs=best.brgemm_batch_size_,
                nthr_k=best.nthr_k_, m_blk=best.m_blk_, lda=best.current_lda_,
                path="micro (m_blk %d x %d, n_blk %d x %d, bs %d)" % (
                    best.m_blk_, best.m_chunk_size_, best.n_blk_, best.n_chunk_size_,
                    best.brgemm_batch_size_), obj=best)


# ============================================================================ public API
# torch's calls -> oneDNN's (trans_a, trans_b, with_sum) (ONEDNN_VERBOSE: src ab/ba, wei ab/ba,
# attr-post-ops:sum). F.linear(x, W) without bias is the same primitive as mmtb (a cache hit).
OPS = {"addmm": (False, False, True), "matmul": (False, False, False), "linear": (False, True, True),
       "mmtb": (False, True, False), "mmta": (True, False, False)}


def op_flags(op):
    """op: one of OPS' names or a (trans_a, trans_b, with_sum) tuple."""
    if isinstance(op, str):
        if op not in OPS:
            raise ValueError("op must be one of %s or a (trans_a, trans_b, with_sum) tuple" % ", ".join(OPS))
        return OPS[op]
    return tuple(bool(v) for v in op)


# Which code runs the product (implementation()), before any AMX blocking applies:
ATEN_MAX_MNK = 16 * 16 * 16       # torch: mkldnn_gemm / checksize need M * N * K > 16^3 for oneDNN
SMALL_SHAPE_A_GB_STRIDE = 126     # oneDNN: AMX declines bf16 when buffer_a_gb_stride <= 126 bytes
IMPLS = ("aten", "gemv", "avx512_core_bf16", "amx")


class NotAMX(ValueError):
    """The product does not run on oneDNN's AMX brgemm: impl is one of IMPLS other than "amx"."""

    def __init__(self, impl, M, N, K):
        super().__init__("M %d N %d K %d: runs on %s, not AMX" % (M, N, K, impl))
        self.impl = impl


def _amx_config(M, N, K, op, nthr, batch=1):
    ta, tb, ws = op_flags(op)
    p = Problem(M, N, K, ta, tb, ws, nthr, batch)
    cfg = macro_find_best(p) if p.macro_supported else None
    if cfg is None:
        cfg = micro_find_best(p)
    return cfg


def implementation(M, N, K, op, nthr, batch=1):
    """What runs torch's 2-D bf16 product (ONEDNN_VERBOSE's implementation name on this machine):
      "aten"             M * N * K <= 4096: torch never calls oneDNN (aten/src/ATen/native/mkldnn/
                         Matmul.cpp: mkldnn_gemm returns false for m * n * k <= 16 * 16 * 16, and
                         checksize() gives the same bound for use_mkldnn_matmul), ATen's own gemm;
      "gemv"             M == 1 or N == 1: oneDNN's GEMV path (is_gemv_applicable), which runs as
                         brg_matmul:avx512_core_bf16;
      "avx512_core_bf16" the AMX brg_matmul declines the "small shape" (init_brgemm_matmul_conf:
                         for bf16, buffer_a_gb_stride = 2 bytes * M_blk * LDA <= 126, with M_blk
                         and LDA (K for a plain A, the copied A's row length otherwise) of the AMX
                         blocking it chose), so brg_matmul:avx512_core_bf16 runs it;
      "amx"              brg_matmul:avx10_1_512_amx (or avx512_core_amx): the order this model gives.
    Verified with ONEDNN_VERBOSE on M 2..64, N 1..128, K 16..5000, all five ops, 1..4 threads.
    batch > 1 (torch.bmm's slices, each [M, K] @ [K, N], A and B contiguous): torch's size check
    counts the whole batch; the GEMV and small-shape rows are not verified for it."""
    if batch * M * N * K <= ATEN_MAX_MNK:
        return "aten"
    if M == 1 or N == 1:
        return "gemv"
    cfg = _amx_config(M, N, K, op, nthr, batch)
    lda = cfg["lda"] or K
    if A_DT_SZ * cfg["m_blk"] * lda <= SMALL_SHAPE_A_GB_STRIDE:
        return "avx512_core_bf16"
    return "amx"


def blocking(M, N, K, op, nthr, batch=1):
    """The configuration oneDNN picks: dict with k_blk, k_chunk_size, bs, nthr_k, m_blk, lda,
    fused_copy_a (macro) and path. Raises NotAMX when the product does not run on the AMX brgemm
    (implementation())."""
    impl = implementation(M, N, K, op, nthr, batch)
    if impl != "amx":
        raise NotAMX(impl, M, N, K)
    return _amx_config(M, N, K, op, nthr, batch)


def rd_block(r):
    """brgemm's K tile for a call of r elements when it may not read past K (brgemm_utils.cpp,
    init_kernel_blocking: the largest even i <= 32 that divides r; 2 when none does)."""
    for i in range(32, 0, -2):
        if r % i == 0:
            return i
    return 2


def common_tile(r):
    """skip_extendable_k's test for one call of r elements: the K tile r / ceil(r / 32) when it is a
    whole, even number of elements (then r splits into equal tiles of at most 32), else None."""
    n = div_up(r, WEI_K_BLK)
    t = r // n
    return t if r % n == 0 and t % 2 == 0 else None


def tiles(M, N, K, op, nthr, batch=1, cfg=None):
    """(tile, last_tile): the K elements of one TDPBF16PS in every brgemm call but the last, and in
    the last call (K % K_blk elements; all of K for one call). 32 everywhere unless K % 32 != 0
    under the macro heuristic with A contiguous (lda = K), where oneDNN (amx_blocking_heuristics.cpp)
    skips its "extendable K" (a last partial tile read past K, zero-padded: the model's 32-element
    tiles with a partial last one) when every call splits into equal even tiles of at most 32
    elements (skip_extendable_k), unless it copies A inside the kernel (use_fused_copy_a: K tiles of
    32 again): the brgemm kernel of a call of r elements then runs tiles of rd_block(r) elements,
    with no partial tile (K 300 in one call: ten tiles of 30). Found with cancelling triples against
    torch (tools/ref/probe_bf16_amx_blocks.py --triples)."""
    cfg = cfg or blocking(M, N, K, op, nthr, batch)
    if K % WEI_K_BLK == 0 or "fused_copy_a" not in cfg or cfg["fused_copy_a"]:
        return WEI_K_BLK, WEI_K_BLK  # a multiple of 32, the micro heuristic, or A copied in the kernel
    step = cfg["k_blk"] * cfg["bs"]
    tail = K % step if step < K else 0
    whole = min(step, K)
    skip = common_tile(whole) is not None and (tail == 0 or common_tile(tail) is not None)
    if not skip:
        return WEI_K_BLK, WEI_K_BLK  # extendable K: tiles of 32 from each call's start, the last partial
    return rd_block(whole), rd_block(tail) if tail else rd_block(whole)


def block_starts(M, N, K, op, nthr, cfg=None):
    """Element index of every brgemm call's start after 0 (one call: K_blk * bs elements, and the
    K tail in a call of its own, brgemm_matmul.cpp compute_kernel)."""
    cfg = cfg or blocking(M, N, K, op, nthr)
    kb, bs = cfg["k_blk"], cfg["bs"]
    step = kb * bs
    starts = []
    pos = step
    while pos < K:
        starts.append(pos)
        pos += step
    # The K tail (K % K_blk elements) is a brgemm call of its own from zero after the last chunk's
    # full K_blk blocks (compute_kernel's is_K_tail; with a copied A too), added in f32 to the sum
    # of the calls before it. With K_blk = 32 (micro) that is the partial tile at K - K % 32, a
    # start inside the last chunk; with bs = 1 (macro) it is the last chunk itself.
    if K > kb and K % kb:
        last = (div_up(K, step) - 1) * step
        tail_start = last + ((K - last) // kb) * kb
        if tail_start not in starts and 0 < tail_start < K:
            starts.append(tail_start)
    return sorted(starts)


def chunk_and_split(M, N, K, op, nthr, batch=1):
    """(chunk elements or 0 for one chunk, list of K starts of the threads after the first or []).

    M, N, K: the product C[M,N] = A[M,K] @ B[K,N]; op: a name of OPS or (trans_a, trans_b, with_sum);
    nthr: torch.get_num_threads(). Returns None when the product does not run on oneDNN's AMX brgemm
    (implementation(M, N, K, op, nthr) says which code does: ATen for M * N * K <= 4096, GEMV for
    M == 1 or N == 1, brg_matmul:avx512_core_bf16 for the small shapes AMX declines); its summation
    order is then not the one modelled here."""
    if implementation(M, N, K, op, nthr, batch) != "amx":
        return None
    cfg = blocking(M, N, K, op, nthr, batch)
    step = cfg["k_blk"] * cfg["bs"]
    chunk = 0 if step >= K else step
    split = []
    if cfg["nthr_k"] > 1:
        kce = cfg["k_blk"] * cfg["k_chunk_size"] * cfg["bs"]
        k_chunks = div_up(K, kce)
        if k_chunks > 1:
            for t in range(1, min(cfg["nthr_k"], k_chunks)):
                s, _ = balance211(k_chunks, cfg["nthr_k"], t)
                split.append(s * kce)
    return chunk, split


def simulate(x, M, N, K, op, nthr, batch=1):
    """One output of the product in the modelled order, from x[k] = a[k] * b[k] (float32; exact for
    bf16 operands, so the products need no rounding; the flush of subnormals is left out): the K
    split's parts (chunk_and_split) each sum their brgemm calls in order from zero, the parts are
    added in order; a call's tiles (tiles(): the last call its own width) each add E + O to the
    call's accumulator, E and O the chains of the tile's even- and odd-index elements; the K tail's
    call of its own (block_starts) is a call like the others, in the last part."""
    x = np.asarray(x, dtype=F)
    chunk, split = chunk_and_split(M, N, K, op, nthr, batch)
    tile, last_tile = tiles(M, N, K, op, nthr, batch)
    starts = sorted(set([0] + block_starts(M, N, K, op, nthr, blocking(M, N, K, op, nthr, batch)) + list(split)))
    bounds = starts + [K]
    part_starts = [0] + list(split)
    sums = [None] * len(part_starts)
    for c0, c1 in zip(bounds[:-1], bounds[1:]):
        w = last_tile if c1 == K else tile
        acc = F(0)
        for t0 in range(c0, c1, w):
            e = o = F(0)
            for k in range(t0, min(t0 + w, c1)):
                if (k - t0) % 2 == 0:
                    e = F(e + x[k])
                else:
                    o = F(o + x[k])
            acc = F(acc + F(e + o))
        i = max(j for j, s0 in enumerate(part_starts) if s0 <= c0)
        sums[i] = acc if sums[i] is None else F(sums[i] + acc)
    total = sums[0]
    for v in sums[1:]:
        total = F(total + v)
    return total

if __name__ == "__main__":
    import sys
    M, N, K = (int(v) for v in sys.argv[1:4])
    op, nthr = sys.argv[4], int(sys.argv[5])
    if implementation(M, N, K, op, nthr) != "amx":
        print(implementation(M, N, K, op, nthr))
        raise SystemExit(0)
    cfg = blocking(M, N, K, op, nthr)
    print({k: v for k, v in cfg.items() if k != "obj"}, chunk_and_split(M, N, K, op, nthr),
          block_starts(M, N, K, op, nthr))
