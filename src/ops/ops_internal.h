// Private pieces of the ops layer shared between src/ops/*.c.
#ifndef GPTMEG_OPS_INTERNAL_H
#define GPTMEG_OPS_INTERNAL_H

#include "gptmeg/ops.h"

// The backward slots' answer until training lands: gm_fail("backward of OP: not yet (...)"), -1.
int gm_op_not_yet(const char *op);

#endif
