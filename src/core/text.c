/* Growable strings with JSON and HTML escapes (text.h). */
#include "core/text.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"

static bool reserve(core_text *t, size_t more) {
    if (!t || t->failed) return false;
    if (more < t->capacity - t->length) return true; /* room for the NUL too */
    if (more > SIZE_MAX / 2 - t->length) {
        t->failed = true;
        return false;
    }
    size_t capacity = t->capacity ? t->capacity : 256;
    while (capacity <= t->length + more) capacity *= 2;
    char *grown = realloc(t->chars, capacity);
    if (!grown) {
        t->failed = true;
        return false;
    }
    t->chars = grown;
    t->capacity = capacity;
    return true;
}

void text_append(core_text *t, const void *data, size_t length) {
    if (!reserve(t, length)) return;
    if (length) memcpy(t->chars + t->length, data, length);
    t->length += length;
    t->chars[t->length] = '\0';
}

void text_puts(core_text *t, const char *s) { text_append(t, s, strlen(s)); }

void text_printf(core_text *t, const char *fmt, ...) {
    if (!t || t->failed) return;
    va_list args, copy;
    va_start(args, fmt);
    va_copy(copy, args);
    int n = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (n < 0)
        t->failed = true;
    else if (reserve(t, (size_t)n)) {
        vsnprintf(t->chars + t->length, (size_t)n + 1, fmt, args);
        t->length += (size_t)n;
    }
    va_end(args);
}

void text_json_string(core_text *t, const char *s, size_t length) {
    text_append(t, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        text_append(t, s + run, i - run);
        if (c == '"' || c == '\\')
            text_printf(t, "\\%c", c);
        else
            text_printf(t, "\\u%04x", c);
        run = i + 1;
    }
    text_append(t, s + run, length - run);
    text_append(t, "\"", 1);
}

void text_json_cstring(core_text *t, const char *s) {
    text_json_string(t, s ? s : "", s ? strlen(s) : 0);
}

void text_json_number(core_text *t, double value) {
    if (isfinite(value))
        text_printf(t, "%.17g", value);
    else
        text_puts(t, "null");
}

void text_html(core_text *t, const char *value) {
    const char *run = value ? value : "", *c = run;
    for (; *c; c++) {
        const char *entity = *c == '&'    ? "&amp;"
                             : *c == '<'  ? "&lt;"
                             : *c == '>'  ? "&gt;"
                             : *c == '"'  ? "&quot;"
                             : *c == '\'' ? "&#39;"
                                          : NULL;
        if (!entity) continue;
        text_append(t, run, (size_t)(c - run));
        text_puts(t, entity);
        run = c + 1;
    }
    text_append(t, run, (size_t)(c - run));
}

porta_status *text_failure(const core_text *t, const char *what) {
    return t->failed ? porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory writing the %s", what)
                     : NULL;
}

porta_status *text_take(core_text *t, const char *what, char **out) {
    if (!reserve(t, 0)) {
        porta_status *status = text_failure(t, what);
        text_free(t);
        return status;
    }
    t->chars[t->length] = '\0';
    *out = t->chars;
    *t = (core_text){0};
    return NULL;
}

void text_free(core_text *t) {
    free(t->chars);
    *t = (core_text){0};
}
