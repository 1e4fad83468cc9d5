// Commands not built yet. Each helper that implements one removes its stub from this file.
#include "cli/cli.h"

static int not_yet(const char *name) { return cli_fail("'%s' is not implemented yet", name); }

int cmd_act(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_report(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_bench(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_tokenize(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_init(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_info(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_logits(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_generate(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_eval(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
int cmd_diverge(int argc, char **argv) { (void)argc; return not_yet(argv[0]); }
