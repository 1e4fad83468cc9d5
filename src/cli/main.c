// gptmeg command line: dispatches to one function per command (cmd_*.c).
#include "cli/cli.h"
#include "gptmeg/target.h"
#include "gptmeg/core.h"
#include "gptmeg/cpu.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

typedef struct {
  const char *name;
  int (*run)(int argc, char **argv);
  const char *summary;
} command;

static const command commands[] = {
    {"act", cmd_act, "GELU family: list, eval, compare, certify"},
    {"report", cmd_report, "compatibility report of every variant:mode (HTML + JSON)"},
    {"bench", cmd_bench, "benchmarks: bench act, bench model, bench train, bench load, bench gemm"},
    {"tokenize", cmd_tokenize, "GPT-2 BPE tokenize / decode stdin"},
    {"init", cmd_init, "write a randomly initialised GPT-2 checkpoint"},
    {"info", cmd_info, "describe a checkpoint or a numerics profile"},
    {"convert", cmd_convert, "Megatron-LM checkpoint -> HF GPT-2 directory"},
    {"logits", cmd_logits, "forward pass: tokens .npy -> logits .npy"},
    {"generate", cmd_generate, "generate text from a prompt"},
    {"eval", cmd_eval, "perplexity of a text file"},
    {"diverge", cmd_diverge, "layer-by-layer divergence of two numerics profiles"},
    {"grad", cmd_grad, "one training step's loss and gradients -> safetensors"},
    {"train", cmd_train, "train a GPT-2 (AdamW, PyTorch's numerics)"},
    {"train-compare", cmd_train_compare, "train under two numerics specs in lockstep, compare per step"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
  fprintf(f, "usage: gptmeg COMMAND [OPTIONS]   (gptmeg COMMAND --help for details)\n\ncommands:\n");
  for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-13s %s\n", commands[i].name, commands[i].summary);
  fprintf(f, "\n  --version  print the version\n  --help     this text\n"
             "\nafter any command:\n"
             "  --torch-target NAME  the torch CPU target whose bits to reproduce (zen4, intel-amx,\n"
             "                       intel-avx512-fp16, intel-avx512-bf16, intel-avx512, avx2; default:\n"
             "                       this CPU's, or\n"
             "                       GPTMEG_TORCH_TARGET); `gptmeg info --cpu` shows it op by op\n"
             "  --quiet              no notes on stderr\n");
}

// The commands whose memory is dominated by a backward's per-step buffers.
static bool runs_backward(int argc, char **argv) {
  if (argc < 2) return false;
  const char *c = argv[1];
  if (!strcmp(c, "train") || !strcmp(c, "grad") || !strcmp(c, "train-compare")) return true;
  return !strcmp(c, "bench") && argc > 2 && !strcmp(argv[2], "train");
}

int main(int argc, char **argv) {
  // OpenMP threads that spin long between parallel regions collapse when the cores are shared
  // (libgomp's default, 300000 spins: 2-thread decode 39 -> 2 tokens/s next to one busy process; f16
  // decode 62 -> 775 ms/token), and threads that sleep at once (OMP_WAIT_POLICY=passive) are woken
  // in every gap of a forward (2-thread bf16 decode 43-45 tokens/s against 63-68 with a short spin,
  // prefill 5-10% slower). A short spin, GOMP_SPINCOUNT=2000, keeps most of the spin's speed on a
  // quiet machine and costs about 10% beside a busy process (docs/performance.md). libgomp reads
  // these once, when it is loaded, so the first run sets it and starts gptmeg again; any
  // OMP_WAIT_POLICY or GOMP_SPINCOUNT set by the user is left alone.
  if (!getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT") && setenv("GOMP_SPINCOUNT", "2000", 1) == 0)
    execv("/proc/self/exe", argv);
#ifdef __GLIBC__
  // glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), after which the
  // backward's per-step buffers come from the heap and stay resident between steps; a fixed
  // threshold keeps every buffer above 128 KiB its own mapping, returned when freed (measured: a
  // 124M training run's peak resident memory 2,223 -> 2,20x MiB, docs/performance.md). Only for
  // the commands that run a backward: elsewhere a fresh mapping per buffer costs page faults on
  // every forward (2-thread bf16 prefill 3-8% slower) and the peak is the same either way.
  if (runs_backward(argc, argv)) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
  if (gm_simd_cap_check()) {
    fprintf(stderr, "gptmeg: %s\n", gm_errmsg());
    return CLI_USAGE;
  }
  if (argc < 2) { usage(stderr); return CLI_USAGE; }
  if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
    usage(stdout);
    return CLI_OK;
  }
  if (strcmp(argv[1], "--version") == 0) { printf("gptmeg %s\n", gm_version()); return CLI_OK; }
  if (gm_torch_target_check()) {
    fprintf(stderr, "gptmeg: %s\n", gm_errmsg());
    return CLI_USAGE;
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (strcmp(argv[1], commands[i].name) == 0) {
      int n = cli_take_global_options(argc - 1, argv + 1);
      if (n < 0) return CLI_USAGE;
      cli_target_note(argv[1]);
      return commands[i].run(n, argv + 1);
    }
  fprintf(stderr, "gptmeg: unknown command '%s'\n", argv[1]);
  usage(stderr);
  return CLI_USAGE;
}
