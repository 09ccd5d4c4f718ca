/* The text buffer of mtext.h. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "model/mtext.h"

void mtext_append(mtext *t, const char *s, size_t length) {
    if (t->failed) return;
    if (t->length + length + 1 > t->capacity) {
        size_t capacity = t->capacity ? t->capacity : 256;
        while (capacity < t->length + length + 1) capacity *= 2;
        char *grown = realloc(t->chars, capacity);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->chars = grown;
        t->capacity = capacity;
    }
    memcpy(t->chars + t->length, s, length);
    t->length += length;
    t->chars[t->length] = '\0';
}

void mtext_puts(mtext *t, const char *s) { mtext_append(t, s, strlen(s)); }

void mtext_printf(mtext *t, const char *fmt, ...) {
    char buf[128];
    va_list args;
    va_start(args, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, args);
    va_end(args);
    if (n < 0 || (size_t)n >= sizeof buf) {
        t->failed = true; /* only short numbers are printed */
        return;
    }
    mtext_append(t, buf, (size_t)n);
}

void mtext_json_string(mtext *t, const char *s, size_t length) {
    mtext_append(t, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < length; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        mtext_append(t, s + start, i - start);
        mtext_printf(t, "\\u%04x", c);
        start = i + 1;
    }
    mtext_append(t, s + start, length - start);
    mtext_append(t, "\"", 1);
}

porta_status *mtext_finish(const mtext *t) {
    return t->failed ? porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory writing a graph")
                     : NULL;
}

void mtext_free(mtext *t) {
    free(t->chars);
    *t = (mtext){0};
}
