// Placeholder until these commands are built; their owner deletes this file.
#include "cli/cli.h"

int cmd_tokenize(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
