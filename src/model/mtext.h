/* A growing text buffer for writing JSON (the .pt2 reader writes the graph
 * it reads as a .porta graph, then parses that). Appending never fails
 * visibly: a failed allocation marks the buffer, and mtext_finish reports it
 * once. */
#ifndef PORTA_MODEL_MTEXT_H
#define PORTA_MODEL_MTEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

typedef struct mtext {
    char *chars;
    size_t length, capacity;
    bool failed;
} mtext;

void mtext_append(mtext *t, const char *s, size_t length);
void mtext_puts(mtext *t, const char *s);
void mtext_printf(mtext *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s (`length` bytes) as a JSON string literal, quoted and escaped. */
void mtext_json_string(mtext *t, const char *s, size_t length);
/* NULL, or an out-of-memory status when an append failed. */
porta_status *mtext_finish(const mtext *t);
void mtext_free(mtext *t);

#endif
