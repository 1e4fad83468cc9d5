// gptmeg bench model: GPT-2 prefill and KV-cache decode throughput on a random model built in
// memory, against the f32 GEMM rate the forward's matmul reaches on this machine in the same run,
// and resident memory against weights + KV cache. cmd_bench.c calls it for `bench model`.
#include "cli/cli.h"
#include "gptmeg/config.h"
#include "gptmeg/model.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *bench_model_help =
    "usage: gptmeg bench model [--config gpt2|tiny|FILE.json] [--threads T] [--dtype f32|f16|bf16] [--json]\n"
    "                          [--prefill N] [--prompt N] [--decode N] [--gemm N]\n"
    "\n"
    "Builds a random model of the config's shape in memory (default gpt2, the 124M shape; no files),\n"
    "then times, in one run:\n"
    "  gemm         OpenBLAS sgemm (single-threaded per tile, OpenMP over tiles) on square N x N x N\n"
    "               (default 2048): GFLOP/s, the machine's reachable f32 rate; and gptmeg's own matmul\n"
    "               in the run's dtype (torch's summation order) on the same shape\n"
    "  prefill      one forward of N tokens (default 512, B=1; best of 2) as generation runs it: only\n"
    "               the last position's logits (logits_to_keep = 1): tokens/s, GFLOP/s, % of gemm\n"
    "  decode       after a --prompt-token prefill (default 128, last logits only), --decode\n"
    "               single-token steps through the KV cache (default 64, greedy): tokens/s, ms/token\n"
    "  memory       VmHWM (peak resident memory) of the generation path above against weights + KV\n"
    "  all-logits   the same prefill computing every position's logits ([N, V], what `logits` and\n"
    "               `eval` need): tokens/s, GFLOP/s, % of gemm, and VmHWM after it\n"
    "FLOPs count every multiply-add twice: the linear layers, q@k^T and p@v over the causal\n"
    "triangle, and the lm_head over the rows whose logits are computed.\n";

// Peak resident set (VmHWM) of this process in bytes; -1 if /proc is unreadable.
static long long vm_hwm(void) {
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long long kb = -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmHWM: %lld kB", &kb) == 1) break;
  fclose(f);
  return kb < 0 ? -1 : kb * 1024;
}

// GFLOP/s on square n x n x n (best of 3): OpenBLAS's f32 tiles (blas), or the forward's own
// torch-order product in dtype dt.
static double gemm_rate(bool blas, const gm_op_ctx *oc, const float *A, const float *B, float *C, int n) {
  double best = 1e30;
  for (int rep = 0; rep < 3; rep++) {
    double t0 = gm_now_s();
    if (blas) cli_matmul_f32_openblas(A, n, B, n, false, NULL, 1.0f, C, n, n, n, n, oc->threads);
    else gm_op_matmul(oc, A, n, B, n, false, NULL, 1.0f, C, n, n, n, n);
    double t = gm_now_s() - t0;
    if (t < best) best = t;
  }
  return 2.0 * (double)n * n * n / best * 1e-9;
}

// FLOPs of a forward over T new positions after t0 cached ones (B=1) computing the logits of the
// last `keep` positions. c must be resolved (n_inner set: the model's cfg, not the defaults).
static double forward_flops(const gm_gpt2_config *c, int t0, int T, int keep) {
  double D = c->n_embd, I = c->n_inner, V = c->vocab_size, L = c->n_layer;
  double lin = 2.0 * T * (D * 3 * D + D * D + D * I + I * D);
  double keys = 0; // sum over new positions of the keys each attends to
  for (int t = 0; t < T; t++) keys += t0 + t + 1;
  double att = 2.0 * 2.0 * keys * D; // q@k^T and p@v over all heads
  return L * (lin + att) + 2.0 * keep * D * V;
}

// Best of `reps` prefills of T tokens keeping `keep` rows of logits (fresh cache each); 1e30 on failure.
static double time_prefill(const gm_gpt2 *m, const gm_profile *p, const int32_t *tok, int T, int keep, float *logits,
                           int threads, int reps, int *rc) {
  double best = 1e30;
  gm_kv_cache kv;
  if ((*rc = gm_kv_init(&kv, m, 1, T))) return best;
  for (int rep = 0; rep < reps && !*rc; rep++) {
    gm_kv_reset(&kv);
    double t0 = gm_now_s();
    *rc = gm_gpt2_run(m, &(gm_gpt2_run_opts){.profile = p, .tokens = tok, .B = 1, .T = T, .kv = &kv, .logits = logits,
                                             .logits_to_keep = keep, .threads = threads});
    double t = gm_now_s() - t0;
    if (t < best) best = t;
  }
  gm_kv_free(&kv);
  return best;
}

int cmd_bench_model(int argc, char **argv) {
  if (cli_wants_help(argc, argv)) { fputs(bench_model_help, stdout); return CLI_OK; }
  const char *cfg_s = "gpt2", *dts = "f32";
  long threads = gm_threads_default(), prefill = 512, prompt = 128, decode = 64, gemm_n = 2048;
  bool json = false;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--config")) { if (!(cfg_s = cli_value("bench model", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--dtype")) { if (!(dts = cli_value("bench model", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--threads")) {
      if (!(v = cli_value("bench model", argc, argv, &i)) || cli_parse_long("bench model", a, v, 1, 1024, &threads)) return CLI_USAGE;
    } else if (!strcmp(a, "--prefill")) {
      if (!(v = cli_value("bench model", argc, argv, &i)) || cli_parse_long("bench model", a, v, 1, 1 << 20, &prefill)) return CLI_USAGE;
    } else if (!strcmp(a, "--prompt")) {
      if (!(v = cli_value("bench model", argc, argv, &i)) || cli_parse_long("bench model", a, v, 1, 1 << 20, &prompt)) return CLI_USAGE;
    } else if (!strcmp(a, "--decode")) {
      if (!(v = cli_value("bench model", argc, argv, &i)) || cli_parse_long("bench model", a, v, 1, 1 << 20, &decode)) return CLI_USAGE;
    } else if (!strcmp(a, "--gemm")) {
      if (!(v = cli_value("bench model", argc, argv, &i)) || cli_parse_long("bench model", a, v, 64, 8192, &gemm_n)) return CLI_USAGE;
    } else return cli_usage_error("bench model", "unknown option '%s'", a);
  }
  gm_dtype dt;
  if (gm_dtype_parse(dts, &dt) || dt == GM_F64 || dt == GM_I32 || dt == GM_I64)
    return cli_usage_error("bench model", "--dtype must be f32, f16 or bf16");
  gm_gpt2_config cfg;
  if (!strcmp(cfg_s, "tiny")) gm_config_tiny(&cfg);
  else if (!strcmp(cfg_s, "gpt2")) gm_config_defaults(&cfg);
  else if (gm_config_load(cfg_s, &cfg)) return cli_fail("%s", gm_errmsg());
  const int P = cfg.n_positions, V = cfg.vocab_size;
  if (prefill > P) return cli_fail("--prefill %ld exceeds n_positions %d", prefill, P);
  if (prompt + decode > P) return cli_fail("--prompt %ld + --decode %ld exceeds n_positions %d", prompt, decode, P);
  gm_profile prof;
  if (gm_profile_get("hf", dt, &prof)) return cli_fail("%s", gm_errmsg());

  // 1. The machine's f32 GEMM rate (OpenBLAS), and the run's own matmul in its dtype.
  size_t nn = (size_t)gemm_n * gemm_n;
  float *A = malloc(nn * sizeof(float)), *Bm = malloc(nn * sizeof(float)), *C = malloc(nn * sizeof(float));
  if (!A || !Bm || !C) { free(A); free(Bm); free(C); return cli_fail("out of memory for %ld^2 matrices", gemm_n); }
  gm_rng r;
  gm_rng_seed(&r, 1);
  for (size_t i = 0; i < nn; i++) { A[i] = (float)gm_rng_uniform(&r) - 0.5f; Bm[i] = (float)gm_rng_uniform(&r) - 0.5f; }
  gm_op_ctx oc; // the forward's matmul in the run's dtype, through the ops layer
  gm_op_ctx_init(&oc, &prof, (int)threads, NULL, NULL);
  double gemm_gflops = gemm_rate(true, &oc, A, Bm, C, (int)gemm_n);
  gm_op_round(&oc, A, nn);
  gm_op_round(&oc, Bm, nn);
  double gemm_dt_gflops = gemm_rate(false, &oc, A, Bm, C, (int)gemm_n);
  free(A); free(Bm); free(C);

  // 2. The model, random, in memory.
  double t0 = gm_now_s();
  gm_gpt2 m;
  if (gm_gpt2_init_random(&m, &cfg, 1)) return cli_fail("%s", gm_errmsg());
  if (gm_gpt2_to_dtype(&m, dt)) { gm_gpt2_free(&m); return cli_fail("%s", gm_errmsg()); }
  double t_init = gm_now_s() - t0;
  int rc = 0;
  const gm_gpt2_config *mc = &m.cfg; // resolved (n_inner)
  int32_t *tok = malloc((size_t)P * sizeof(int32_t));
  float *logits = malloc((size_t)V * sizeof(float)), *all = NULL;
  if (!tok || !logits) { rc = gm_fail("out of memory for the tokens"); goto done; }
  for (int i = 0; i < P; i++) tok[i] = (int32_t)(gm_rng_u64(&r) % (uint64_t)V);

  // 3. Prefill as generation runs it: last position's logits only.
  double t_prefill = time_prefill(&m, &prof, tok, (int)prefill, 1, logits, (int)threads, 2, &rc);
  if (rc) goto done;
  double pf_flops = forward_flops(mc, 0, (int)prefill, 1);

  // 4. Decode: prompt through the cache (last logits only), then single-token greedy steps.
  gm_kv_cache kv;
  if ((rc = gm_kv_init(&kv, &m, 1, (int)(prompt + decode)))) goto done;
  rc = gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &prof, .tokens = tok, .B = 1, .T = (int)prompt, .kv = &kv,
                                        .logits = logits, .logits_to_keep = 1, .threads = (int)threads});
  double dec_flops = 0;
  t0 = gm_now_s();
  for (long s = 0; s < decode && !rc; s++) {
    int32_t next = 0;
    for (int i = 1; i < V; i++)
      if (logits[i] > logits[next]) next = i;
    dec_flops += forward_flops(mc, kv.len, 1, 1);
    rc = gm_gpt2_run(&m, &(gm_gpt2_run_opts){.profile = &prof, .tokens = &next, .B = 1, .T = 1, .kv = &kv, .logits = logits,
                                          .threads = (int)threads});
  }
  double t_decode = gm_now_s() - t0;
  gm_kv_free(&kv);
  if (rc) goto done;
  long long hwm = vm_hwm(); // the generation path's peak: nothing of size [T, V] allocated so far

  // 5. The all-logits prefill ([T, V], what `logits` and `eval` compute), measured last.
  if (!(all = malloc((size_t)prefill * V * sizeof(float)))) { rc = gm_fail("out of memory for logits [%ld, %d]", prefill, V); goto done; }
  double t_all = time_prefill(&m, &prof, tok, (int)prefill, 0, all, (int)threads, 2, &rc);
  if (rc) goto done;
  long long hwm_all = vm_hwm();
  double all_flops = forward_flops(mc, 0, (int)prefill, (int)prefill);

  // Weights as held: the f32 storage, plus the f16 copy (f16 runs) or the bf16 pair layout (bf16
  // runs) of the four matrices of every layer and lm_head, which the matmuls read instead.
  double mat_params = (double)cfg.n_layer * ((double)cfg.n_embd * 4 * cfg.n_embd + 2.0 * cfg.n_embd * mc->n_inner) +
                      (double)V * cfg.n_embd;
  double f32_bytes = (double)m.n_params * 4, copy_bytes = (double)m.copy_bytes;
  double w_bytes = f32_bytes + copy_bytes;
  // A decode step reads every matrix once, in the form its kernel reads (2 bytes a weight from a copy)
  double step_bytes = mat_params * (copy_bytes > 0 ? 2 : 4);
  double kv_prefill = 2.0 * cfg.n_layer * prefill * cfg.n_embd * 4, kv_decode = 2.0 * cfg.n_layer * (prompt + decode) * cfg.n_embd * 4;
  double kv_max = kv_prefill > kv_decode ? kv_prefill : kv_decode;
  double logit_bytes = (double)prefill * V * 4;
  double pf_tps = prefill / t_prefill, pf_gf = pf_flops / t_prefill * 1e-9;
  double all_tps = prefill / t_all, all_gf = all_flops / t_all * 1e-9;
  double dec_tps = decode / t_decode, dec_gf = dec_flops / t_decode * 1e-9;
  double dec_gbs = step_bytes * decode / t_decode * 1e-9; // matrices streamed once per token
  if (json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "config", cfg_s);
    cJSON_AddStringToObject(o, "dtype", gm_dtype_name(dt));
    cJSON_AddNumberToObject(o, "threads", (double)threads);
    cJSON_AddNumberToObject(o, "params", (double)m.n_params);
    cJSON_AddNumberToObject(o, "init_s", t_init);
    cJSON_AddNumberToObject(o, "gemm_n", (double)gemm_n);
    cJSON_AddNumberToObject(o, "gemm_gflops", gemm_gflops);
    cJSON_AddNumberToObject(o, "gemm_dtype_gflops", gemm_dt_gflops);
    cJSON_AddNumberToObject(o, "prefill_pct_of_dtype_gemm", 100 * pf_flops / t_prefill * 1e-9 / gemm_dt_gflops);
    cJSON_AddNumberToObject(o, "prefill_all_logits_pct_of_dtype_gemm", 100 * all_flops / t_all * 1e-9 / gemm_dt_gflops);
    cJSON_AddNumberToObject(o, "prefill_tokens", (double)prefill);
    cJSON_AddNumberToObject(o, "prefill_s", t_prefill);
    cJSON_AddNumberToObject(o, "prefill_tokens_per_s", pf_tps);
    cJSON_AddNumberToObject(o, "prefill_gflops", pf_gf);
    cJSON_AddNumberToObject(o, "prefill_pct_of_gemm", 100 * pf_gf / gemm_gflops);
    cJSON_AddNumberToObject(o, "prefill_logits_to_keep", 1);
    cJSON_AddNumberToObject(o, "prefill_all_logits_s", t_all);
    cJSON_AddNumberToObject(o, "prefill_all_logits_tokens_per_s", all_tps);
    cJSON_AddNumberToObject(o, "prefill_all_logits_gflops", all_gf);
    cJSON_AddNumberToObject(o, "prefill_all_logits_pct_of_gemm", 100 * all_gf / gemm_gflops);
    cJSON_AddNumberToObject(o, "decode_prompt", (double)prompt);
    cJSON_AddNumberToObject(o, "decode_tokens", (double)decode);
    cJSON_AddNumberToObject(o, "decode_s", t_decode);
    cJSON_AddNumberToObject(o, "decode_tokens_per_s", dec_tps);
    cJSON_AddNumberToObject(o, "decode_ms_per_token", 1e3 / dec_tps);
    cJSON_AddNumberToObject(o, "decode_gflops", dec_gf);
    cJSON_AddNumberToObject(o, "decode_weight_gb_per_s", dec_gbs);
    cJSON_AddNumberToObject(o, "vm_hwm_bytes", (double)hwm);
    cJSON_AddNumberToObject(o, "weights_bytes", w_bytes);
    cJSON_AddNumberToObject(o, "weights_f32_bytes", f32_bytes);
    cJSON_AddNumberToObject(o, "weights_copy_bytes", copy_bytes);
    cJSON_AddNumberToObject(o, "decode_step_weight_bytes", step_bytes);
    cJSON_AddNumberToObject(o, "kv_bytes_prefill", kv_prefill);
    cJSON_AddNumberToObject(o, "kv_bytes_decode", kv_decode);
    cJSON_AddNumberToObject(o, "vm_hwm_over_weights_kv", (double)hwm / (w_bytes + kv_max));
    cJSON_AddNumberToObject(o, "vm_hwm_all_logits_bytes", (double)hwm_all);
    cJSON_AddNumberToObject(o, "logits_bytes", logit_bytes);
    char *s = cJSON_PrintUnformatted(o);
    printf("%s\n", s);
    free(s);
    cJSON_Delete(o);
  } else {
    printf("model    %s, %s, %.1f M parameters (random, built in %.2f s), %ld thread(s)\n", cfg_s, gm_dtype_name(dt),
           (double)m.n_params / 1e6, t_init, threads);
    printf("gemm     %ldx%ldx%ld f32 (OpenBLAS): %.1f GFLOP/s\n", gemm_n, gemm_n, gemm_n, gemm_gflops);
    printf("gemm     %ldx%ldx%ld %s (gptmeg's %s matmul): %.1f GFLOP/s; prefill %.0f%%, all-logits %.0f%% of it\n", gemm_n,
             gemm_n, gemm_n, gm_dtype_name(dt), gm_dtype_name(dt), gemm_dt_gflops, 100 * pf_flops / t_prefill * 1e-9 / gemm_dt_gflops,
             100 * all_flops / t_all * 1e-9 / gemm_dt_gflops);
    printf("prefill  %ld tokens, last logits only (generation): %.3f s, %.1f tokens/s, %.1f GFLOP/s = %.0f%% of gemm\n",
           prefill, t_prefill, pf_tps, pf_gf, 100 * pf_gf / gemm_gflops);
    printf("decode   %ld tokens after a %ld-token prompt: %.1f tokens/s, %.2f ms/token, %.1f GFLOP/s, %.1f GB/s of matrix "
           "weights (%.0f MiB a step)\n",
           decode, prompt, dec_tps, 1e3 / dec_tps, dec_gf, dec_gbs, step_bytes / 1048576.0);
    if (copy_bytes > 0)
      printf("memory   VmHWM %.1f MiB (generation path) = %.2fx weights held %.1f MiB (f32 %.1f MiB + %s copy %.1f MiB) + "
             "KV %.1f MiB\n",
             hwm / 1048576.0, (double)hwm / (w_bytes + kv_max), w_bytes / 1048576.0, f32_bytes / 1048576.0,
             gm_dtype_name(dt), copy_bytes / 1048576.0, kv_max / 1048576.0);
    else
      printf("memory   VmHWM %.1f MiB (generation path) = %.2fx weights %.1f MiB (f32) + KV %.1f MiB\n", hwm / 1048576.0,
             (double)hwm / (w_bytes + kv_max), w_bytes / 1048576.0, kv_max / 1048576.0);
    printf("all-logits prefill %ld tokens ([%ld, %d] logits): %.3f s, %.1f tokens/s, %.1f GFLOP/s = %.0f%% of gemm; "
           "VmHWM %.1f MiB with the %.1f MiB of logits\n",
           prefill, prefill, V, t_all, all_tps, all_gf, 100 * all_gf / gemm_gflops, hwm_all / 1048576.0,
           logit_bytes / 1048576.0);
  }
done:
  free(tok);
  free(logits);
  free(all);
  gm_gpt2_free(&m);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
