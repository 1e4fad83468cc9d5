// gptmeg bench train: the time of one training step (gm_gpt2_grad, then AdamW over every tensor)
// on a random model (--dtype bf16/f16: the bf16-megatron / fp16-megatron step without its loss
// scale: the backward on the dtype copy, AdamW on the f32 main weights, the copy refreshed), and the optimizer's bandwidth against memcpy of the same bytes measured in the
// same run. The baseline of the step itself is PyTorch's (bench/train_vs_torch.py runs both).
#include "cli/cli.h"
#include "gptmeg/train.h"

#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *x, int n) {
  qsort(x, (size_t)n, sizeof *x, cmp_double);
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int cmd_bench_train(int argc, char **argv) {
  const char *usage = "usage: gptmeg bench train [--config gpt2|tiny|FILE.json] [--batch B] [--seq T] [--steps N] [--warmup W]\n"
                      "                          [--threads N] [--fused] [--dtype f32|bf16|f16] [--json]\n"
                      "  Median time of one training step (forward + backward, then AdamW; no gradient clipping) on a random model,\n"
                      "  f32, or the bf16-megatron / fp16-megatron step (backward on the dtype copy of the weights, AdamW on the\n"
                      "  f32 main weights, the copy refreshed; no loss scale),\n"
                      "  the two parts, and AdamW's GB/s (weights, grads and both moments read, weights and moments\n"
                      "  written: 28 bytes a parameter) against memcpy of as many bytes in the same run.\n";
  if (cli_wants_help(argc, argv)) { fputs(usage, stdout); return CLI_OK; }
  const char *cfg_s = "gpt2";
  long B = 4, T = 64, steps = 3, warmup = 1, threads = 0;
  bool json = false, fused = false;
  gm_dtype dt = GM_F32;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v;
    long *dst = !strcmp(a, "--batch") ? &B : !strcmp(a, "--seq") ? &T : !strcmp(a, "--steps") ? &steps
              : !strcmp(a, "--warmup") ? &warmup : !strcmp(a, "--threads") ? &threads : NULL;
    if (dst) {
      if (!(v = cli_value("bench train", argc, argv, &i)) || cli_parse_long("bench train", a, v, dst == &warmup ? 0 : 1, 1 << 20, dst))
        return CLI_USAGE;
    } else if (!strcmp(a, "--config")) { if (!(cfg_s = cli_value("bench train", argc, argv, &i))) return CLI_USAGE; }
    else if (!strcmp(a, "--json")) json = true;
    else if (!strcmp(a, "--fused")) fused = true;
    else if (!strcmp(a, "--dtype")) {
      if (!(v = cli_value("bench train", argc, argv, &i))) return CLI_USAGE;
      if (gm_dtype_parse(v, &dt)) return cli_usage_error("bench train", "--dtype: %s", gm_errmsg());
    }
    else return cli_usage_error("bench train", "unknown option '%s'", a);
  }
  gm_gpt2_config cfg;
  if (!strcmp(cfg_s, "tiny")) gm_config_tiny(&cfg);
  else if (!strcmp(cfg_s, "gpt2")) gm_config_defaults(&cfg);
  else if (gm_config_load(cfg_s, &cfg)) return cli_fail("%s", gm_errmsg());
  if (T > cfg.n_positions) return cli_fail("--seq %ld exceeds n_positions %d", T, cfg.n_positions);
  gm_profile p;
  if (gm_profile_get("hf", dt, &p)) return cli_fail("--dtype: %s", gm_errmsg());
  gm_gpt2 m, g, work; // the f32 (main) weights, the gradients, the dtype copy the backward runs on
  memset(&work, 0, sizeof work);
  if (gm_gpt2_init_random(&m, &cfg, 1)) return cli_fail("%s", gm_errmsg());
  if (dt != GM_F32 && (gm_gpt2_alloc_working(&work, &m, dt) || gm_gpt2_set_weights(&work, &m, (int)threads))) {
    gm_gpt2_free(&work);
    gm_gpt2_free(&m);
    return cli_fail("%s", gm_errmsg());
  }
  const gm_gpt2 *w = dt != GM_F32 ? &work : &m;
  if (gm_gpt2_alloc_like(&g, w)) { gm_gpt2_free(&work); gm_gpt2_free(&m); return cli_fail("%s", gm_errmsg()); }
  gm_train_opts o;
  gm_train_opts_default(&o);
  o.profile = &p;
  o.threads = (int)threads;
  gm_train_set_optimizer(&o, 1e-4, 0, false, 0.01, 0.9, 0.999, 1e-8, fused);
  o.clip = 0; // the step bench/train_vs_torch.py times on torch: no clip_grad_norm_
  gm_train_state s;
  int32_t *ids = malloc((size_t)B * T * sizeof *ids);
  double *tg = malloc((size_t)(steps + warmup) * 3 * sizeof *tg);
  const size_t bytes = (size_t)m.n_params * 4 * 4;
  char *src = malloc(bytes), *dst = malloc(bytes);
  int rc = ids && tg && src && dst ? gm_train_state_init(&s, &m, &o) : gm_fail("out of memory");
  if (!rc) {
    gm_rng r;
    gm_rng_seed(&r, 2);
    for (long i = 0; i < B * T; i++) ids[i] = (int32_t)(gm_rng_u64(&r) % (uint64_t)cfg.vocab_size);
    memset(src, 1, bytes);
    memset(dst, 2, bytes); // not 0: the compiler may turn malloc + memset(0) into calloc, leaving the pages untouched
  }
  double *tgrad = tg, *topt = tg + steps + warmup, *tmem = topt + steps + warmup;
  for (long k = 0; !rc && k < steps + warmup; k++) {
    float loss;
    gm_gpt2_grad_opts go = {&p, ids, NULL, (int)B, (int)T, (int)threads, 1.0f, NULL};
    double t0 = gm_now_s();
    rc = gm_gpt2_grad(w, &go, &g, &loss, NULL);
    double t1 = gm_now_s();
    s.step = k + 1;
    if (!rc) rc = gm_train_optimizer_step(&m, &g, &s, &o, 1e-4, NULL); // g's f32 storage: the main gradients
    if (!rc && dt != GM_F32) rc = gm_gpt2_set_weights(&work, &m, (int)threads);
    double t2 = gm_now_s();
    memcpy(dst, src, bytes); // the optimizer's bytes moved once, as a baseline
    double t3 = gm_now_s();
    tgrad[k] = t1 - t0;
    topt[k] = t2 - t1;
    tmem[k] = t3 - t2;
  }
  if (!rc) {
    double gs = median(tgrad + warmup, (int)steps), os = median(topt + warmup, (int)steps), ms = median(tmem + warmup, (int)steps);
    double ob = 28.0 * (double)m.n_params, mb = 2.0 * (double)bytes; // memcpy reads and writes its bytes
    if (json)
      printf("{\"config\": \"%s\", \"batch\": %ld, \"seq\": %ld, \"threads\": %d, \"n_params\": %llu, \"step_s\": %.6f, "
             "\"grad_s\": %.6f, \"optim_s\": %.6f, \"optim_gbps\": %.3f, \"memcpy_gbps\": %.3f, \"fused\": %s, \"dtype\": \"%s\"}\n",
             cfg_s, B, T, o.threads > 0 ? o.threads : 0, (unsigned long long)m.n_params, gs + os, gs, os, ob / os * 1e-9,
             mb / ms * 1e-9, fused ? "true" : "false", gm_dtype_name(dt));
    else
      printf("training step (%s %s, B %ld, T %ld, %llu parameters): %.3f s = forward+backward %.3f s + AdamW%s%s %.4f s\n"
             "AdamW moves %.0f MB: %.1f GB/s; memcpy of %.0f MB in the same run: %.1f GB/s (AdamW at %.2f of memcpy)\n",
             cfg_s, gm_dtype_name(dt), B, T, (unsigned long long)m.n_params, gs + os, gs, fused ? " (fused)" : "",
             dt != GM_F32 ? " and the dtype copy" : "", os, ob * 1e-6,
             ob / os * 1e-9, mb * 1e-6, mb / ms * 1e-9, (ob / os) / (mb / ms));
  }
  if (ids && tg && src && dst) gm_train_state_free(&s);
  free(ids), free(tg), free(src), free(dst);
  gm_gpt2_free(&g);
  gm_gpt2_free(&work);
  gm_gpt2_free(&m);
  return rc ? cli_fail("%s", gm_errmsg()) : CLI_OK;
}
