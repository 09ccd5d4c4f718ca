/* A growable string for the report's writers: printf-style appends and the
 * escapes JSON and HTML need. Running out of memory is sticky: later
 * appends do nothing and text_take reports it once. */
#ifndef PORTA_REPORT_TEXT_H
#define PORTA_REPORT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "porta.h"

typedef struct report_text {
    char *chars;
    size_t length, capacity;
    bool failed;
} report_text;

void text_printf(report_text *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal, quotes included. */
void text_json_string(report_text *text, const char *value);
/* A number, or null when it is not finite (JSON has no NaN). */
void text_json_number(report_text *text, double value);
/* Text with &, <, >, " and ' escaped for HTML content and attributes. */
void text_html(report_text *text, const char *value);
/* Hands the NUL-terminated string to *out (free with free()). */
porta_status *text_take(report_text *text, const char *what, char **out);

#endif
