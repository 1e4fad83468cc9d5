// Placeholder until diverge is built; its owner deletes this file.
#include "cli/cli.h"

int cmd_diverge(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
