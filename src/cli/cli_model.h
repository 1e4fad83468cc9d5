// Helpers shared by the model commands generate, eval and init (cli_model.c): finding the
// tokenizer of a model folder and copying one into it.
#ifndef GPTMEG_CLI_MODEL_H
#define GPTMEG_CLI_MODEL_H

#include "gptmeg/tok.h"

// Loads vocab.json + merges.txt from tokdir if given, else from model_dir. A missing file fails
// with one line naming it and saying how to supply it (--tokenizer DIR, gptmeg init --tokenizer).
int cli_load_tokenizer(const char *model_dir, const char *tokdir, gm_tokenizer **out);
// Copies src_dir/vocab.json and src_dir/merges.txt into dst_dir (each written atomically), after
// checking that they load as a tokenizer.
int cli_copy_tokenizer(const char *src_dir, const char *dst_dir);

#endif
