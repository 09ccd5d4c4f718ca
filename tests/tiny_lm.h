/* The tiny KV-cache language model the generation tests share: logits =
 * table[ids] (row i peaks at i + 1 mod 5, so the next token is the fed
 * token + 1 mod 5), keys/values of 6 tokens come back unchanged, batch
 * 1 to 8: the inputs and outputs torch_porta.export_causal_lm writes. */
#ifndef PORTA_TESTS_TINY_LM_H
#define PORTA_TESTS_TINY_LM_H

#include <stdbool.h>
#include <stddef.h>

/* Makes a temporary directory in `dir` (removed by test_remove_tree) and
 * writes the model to `path` inside it; false, with the test failed, on
 * error. */
bool tiny_lm_save(char *dir, size_t dir_cap, char *path, size_t path_cap);

#endif
