// Placeholder until these commands are built; their owner deletes this file.
#include "cli/cli.h"

int cmd_init(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
int cmd_info(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
int cmd_logits(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
int cmd_generate(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
int cmd_eval(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
