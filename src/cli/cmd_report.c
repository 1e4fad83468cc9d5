// gptmeg report: placeholder while the report is written (replaced below).
#include "cli/cli.h"
int cmd_report(int argc, char **argv) { (void)argc; return cli_fail("'%s' is not implemented yet", argv[0]); }
