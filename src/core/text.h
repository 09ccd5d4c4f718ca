/* The one growable string: the writers of JSON, HTML and tables (the
 * safetensors header, the .pt2 graph rewritten as a .porta graph, the
 * comparison report), the kernel renderers (C and OpenCL C source), and
 * the writers of bytes (the compiler's trace keys, ZIP archives in memory:
 * text_append takes any bytes, NULs included).
 * Running out of memory is sticky: later appends do nothing, and
 * text_failure / text_take report it once, so writers append without
 * checking each call. A NULL text accepts and drops every append, so the
 * renderers' op spellers double as support predicates. */
#ifndef PORTA_CORE_TEXT_H
#define PORTA_CORE_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "porta.h"

typedef struct core_text {
    char *chars; /* NUL-terminated once anything was appended */
    size_t length, capacity;
    bool failed;
} core_text;

void text_append(core_text *t, const void *data, size_t length);
void text_puts(core_text *t, const char *s);
void text_printf(core_text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s (`length` bytes) as a JSON string literal: quotes, backslashes and
 * control characters escaped, other bytes (UTF-8 checked by the caller) as
 * they are. */
void text_json_string(core_text *t, const char *s, size_t length);
/* The same for a NUL-terminated string; NULL writes "". */
void text_json_cstring(core_text *t, const char *s);
/* A number, or null when it is not finite (JSON has no NaN). */
void text_json_number(core_text *t, double value);
/* Text with &, <, >, " and ' escaped for HTML content and attributes. */
void text_html(core_text *t, const char *value);
/* NULL, or an out-of-memory status naming what was being written. */
porta_status *text_failure(const core_text *t, const char *what);
/* Hands the NUL-terminated string to *out (free with free()); on an
 * earlier failure frees the text and returns text_failure's status. */
porta_status *text_take(core_text *t, const char *what, char **out);
void text_free(core_text *t);

#endif
