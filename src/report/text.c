/* Growable strings with JSON and HTML escapes (text.h). */
#include "report/text.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static bool reserve(report_text *text, size_t more) {
    if (text->failed) return false;
    if (text->length + more + 1 <= text->capacity) return true;
    size_t capacity = text->capacity ? text->capacity : 1024;
    while (capacity < text->length + more + 1) capacity *= 2;
    char *grown = realloc(text->chars, capacity);
    if (!grown) {
        text->failed = true;
        return false;
    }
    text->chars = grown;
    text->capacity = capacity;
    return true;
}

void text_printf(report_text *text, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    va_list copy;
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n >= 0 && reserve(text, (size_t)n)) {
        vsnprintf(text->chars + text->length, (size_t)n + 1, fmt, args);
        text->length += (size_t)n;
    }
    va_end(args);
}

void text_json_string(report_text *text, const char *value) {
    text_printf(text, "\"");
    for (const unsigned char *c = (const unsigned char *)(value ? value : ""); *c; c++) {
        if (*c == '"' || *c == '\\')
            text_printf(text, "\\%c", *c);
        else if (*c == '\n')
            text_printf(text, "\\n");
        else if (*c < 0x20)
            text_printf(text, "\\u%04x", *c);
        else
            text_printf(text, "%c", *c);
    }
    text_printf(text, "\"");
}

void text_json_number(report_text *text, double value) {
    if (isfinite(value))
        text_printf(text, "%.17g", value);
    else
        text_printf(text, "null");
}

void text_html(report_text *text, const char *value) {
    for (const char *c = value ? value : ""; *c; c++) {
        switch (*c) {
        case '&': text_printf(text, "&amp;"); break;
        case '<': text_printf(text, "&lt;"); break;
        case '>': text_printf(text, "&gt;"); break;
        case '"': text_printf(text, "&quot;"); break;
        case '\'': text_printf(text, "&#39;"); break;
        default: text_printf(text, "%c", *c);
        }
    }
}

porta_status *text_take(report_text *text, const char *what, char **out) {
    if (text->failed || !reserve(text, 0)) {
        free(text->chars);
        *text = (report_text){0};
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory writing the %s", what);
    }
    text->chars[text->length] = '\0';
    *out = text->chars;
    *text = (report_text){0};
    return NULL;
}
