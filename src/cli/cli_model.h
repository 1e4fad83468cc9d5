// Helpers shared by the model commands generate, eval, init, logits and diverge (cli_model.c):
// finding the tokenizer of a model folder, copying one into it, reading token ids from a .npy.
#ifndef GPTMEG_CLI_MODEL_H
#define GPTMEG_CLI_MODEL_H

#include "gptmeg/tok.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Loads vocab.json + merges.txt from tokdir if given, else from model_dir. A missing file fails
// with one line naming it and saying how to supply it (--tokenizer DIR, gptmeg init --tokenizer).
int cli_load_tokenizer(const char *model_dir, const char *tokdir, gm_tokenizer **out);
// Copies src_dir/vocab.json and src_dir/merges.txt into dst_dir (each written atomically), after
// checking that they load as a tokenizer.
int cli_copy_tokenizer(const char *src_dir, const char *dst_dir);
// Reads token ids from an int32/int64 .npy (gm_npy_read) into a malloc'd int32 array of *n ids
// (each must fit int32; the vocabulary range is the caller's check). any_shape: read flat,
// *B = 1, *T = *n, and *n may be 0; else the array must be [B, T] or [T] (B = 1) and not empty.
// B and T may be NULL. Errors name the file and what is wrong.
int cli_read_tokens_npy(const char *path, bool any_shape, int32_t **ids, size_t *n, int *B, int *T);

#endif
