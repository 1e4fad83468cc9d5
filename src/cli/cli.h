// Shared helpers for the gptmeg command line. Exit codes: 0 ok, 1 failure, 2 usage error.
#ifndef GPTMEG_CLI_H
#define GPTMEG_CLI_H

#include "gptmeg/model.h"

#include <stdbool.h>
#include <stdio.h>

// bench_blas.c: the benchmark's baseline GEMM (OpenBLAS is linked into the CLI only).
// C[M, N] (row stride ldc) = A[M, K] (stride lda) @ op(B) [+ bias[N]], f32 in, f32 out.
// op(B) = B [K, N] (stride ldb) or, with trans_b, B^T for B [N, K] (stride ldb). alpha scales A@B.
// Through OpenBLAS cblas_sgemm (its own summation order), single-threaded per 256 x 256 tile with
// OpenMP over tiles: the machine's GEMM rate that `bench model` reports, not the forward's product.
void cli_matmul_f32_openblas(const float *A, int lda, const float *B, int ldb, bool trans_b, const float *bias,
                             float alpha, float *C, int ldc, int M, int N, int K, int threads);

enum { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

// Each command: argv[0] is the command name. Returns an exit code.
int cmd_act(int argc, char **argv);      // act list|eval|compare|certify
int cmd_act_certify(int argc, char **argv); // act certify (cmd_certify.c); argv[0] is "certify"
int cmd_report(int argc, char **argv);   // report
int cmd_bench(int argc, char **argv);    // bench act|model
int cmd_bench_model(int argc, char **argv); // bench model (cmd_bench_model.c); argv[0] is "model"
int cmd_tokenize(int argc, char **argv); // tokenize
int cmd_init(int argc, char **argv);     // init
int cmd_info(int argc, char **argv);     // info
int cmd_convert(int argc, char **argv);  // convert (Megatron-LM -> HF)
int cmd_logits(int argc, char **argv);   // logits
int cmd_generate(int argc, char **argv); // generate
int cmd_eval(int argc, char **argv);     // eval
int cmd_diverge(int argc, char **argv);  // diverge
int cmd_grad(int argc, char **argv);     // grad
int cmd_train(int argc, char **argv);    // train
int cmd_train_compare(int argc, char **argv); // train-compare (cmd_train_compare.c)
int cmd_bench_train(int argc, char **argv); // bench train (cmd_bench_train.c); argv[0] is "train"
int cmd_bench_load(int argc, char **argv);  // bench load (cmd_bench_load.c); argv[0] is "load"
int cmd_bench_gemm(int argc, char **argv);  // bench gemm (cmd_bench_gemm.c); argv[0] is "gemm"

// Prints "gptmeg: <msg>" to stderr and returns CLI_FAIL (for library errors: gm_errmsg()).
// cli_target.c: the global options --torch-target NAME and --quiet, taken out of argv before the
// command parses it (returns the new argc, -1 after a usage error); the target as info prints it;
// one line naming the target and the ops not exact under it in dtype dt (into buf).
extern bool cli_quiet;
int cli_take_global_options(int argc, char **argv);
void cli_print_target(FILE *f);
void cli_target_note(const char *cmd);
void cli_target_line(gm_dtype dt, char *buf, size_t n);

int cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// Prints "gptmeg CMD: <msg>" plus "try 'gptmeg CMD --help'" to stderr and returns CLI_USAGE.
int cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// True if argv has --help or -h.
bool cli_wants_help(int argc, char **argv);
// Option value parsing: return 0 on success, else print a usage error and return CLI_USAGE.
int cli_parse_long(const char *cmd, const char *opt, const char *s, long lo, long hi, long *out);
int cli_parse_double(const char *cmd, const char *opt, const char *s, double *out);
// Fetch the value of option argv[*i] (advancing *i); NULL + usage message if missing.
const char *cli_value(const char *cmd, int argc, char **argv, int *i);

// ---- numerics-profile options (cli_profile.c) ----
enum { CLI_MAX_KNOBS = 16 };
typedef struct {
  const char *profile;              // NULL: "hf"
  int n_knobs;
  const char *knob[CLI_MAX_KNOBS];  // knob names without "--", applied in order
  const char *value[CLI_MAX_KNOBS];
  char recorded[32];                // the model's recorded profile (cli_profile_recorded), profile points here
} cli_profile_opts;
// Help lines for --profile and the knob flags.
extern const char *const cli_profile_help;
// If argv[*i] is --profile or a knob flag, consumes it and its value (advancing *i) and returns 1;
// returns 0 if it is not one; -1 after printing a usage error (missing value).
int cli_profile_option(const char *cmd, int argc, char **argv, int *i, cli_profile_opts *o);
// The profile for dt with the knobs applied; -1 with gm_errmsg() set (lists the valid values).
int cli_profile_build(const cli_profile_opts *o, gm_dtype dt, gm_profile *p);
// Without --profile: the profile recorded for the model at dir becomes the default, said once on
// stderr ("profile megatron (recorded in DIR/config.json)"): config.json's "gptmeg_profile"
// (gptmeg convert writes it), or megatron for a Megatron-LM checkpoint (directory or NGC .zip).
// Nothing recorded: o is left as it is (hf). An unknown or malformed recorded profile: -1 with
// one line in gm_errmsg(). With --profile given, nothing is read.
int cli_profile_recorded(cli_profile_opts *o, const char *dir);
// The profile recorded for the model at dir into name (cap bytes): 1 found (*from: "DIR/config.json"
// or "a Megatron-LM checkpoint"), 0 none, -1 a bad record (gm_errmsg() says why).
int cli_profile_of_model(const char *dir, char *name, size_t cap, char *from, size_t from_cap);

#endif
