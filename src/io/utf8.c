/* UTF-8 as RFC 3629 defines it: the shortest form only, no surrogates,
 * nothing past U+10FFFF. */
#include "io/utf8.h"

#include <stdio.h>

int utf8_sequence_length(const unsigned char *s, size_t available) {
    if (available == 0) return 0;
    unsigned char b0 = s[0];
    if (b0 < 0x80) return 1;
    int length;
    unsigned char low = 0x80, high = 0xBF; /* allowed range of the second byte */
    if (b0 >= 0xC2 && b0 <= 0xDF) {
        length = 2;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        length = 3;
        if (b0 == 0xE0) low = 0xA0;  /* below: overlong */
        if (b0 == 0xED) high = 0x9F; /* above: surrogates */
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        length = 4;
        if (b0 == 0xF0) low = 0x90;  /* below: overlong */
        if (b0 == 0xF4) high = 0x8F; /* above: past U+10FFFF */
    } else {
        return 0; /* continuation byte, C0/C1 (overlong) or F5..FF */
    }
    if (available < (size_t)length) return 0;
    if (s[1] < low || s[1] > high) return 0;
    for (int i = 2; i < length; i++)
        if ((s[i] & 0xC0) != 0x80) return 0;
    return length;
}

bool utf8_is_valid(const char *s, size_t length, size_t *bad_offset) {
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < length) {
        if (u[i] < 0x80) {
            i++;
            continue;
        }
        int n = utf8_sequence_length(u + i, length - i);
        if (!n) {
            if (bad_offset) *bad_offset = i;
            return false;
        }
        i += (size_t)n;
    }
    return true;
}

int utf8_encode(uint32_t cp, char out[4]) {
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

const char *utf8_excerpt(const char *s, size_t length, char *buf, size_t cap) {
    enum { SHOWN = 60 };
    size_t used = 0;
    if (cap < 8) {
        if (cap) buf[0] = '\0';
        return buf;
    }
    buf[used++] = '"';
    for (size_t i = 0; i < length && i < SHOWN && used + 8 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7F && c != '"' && c != '\\')
            buf[used++] = (char)c;
        else
            used += (size_t)snprintf(buf + used, cap - used, "\\x%02X", c);
    }
    buf[used++] = '"';
    if (length > SHOWN && used + 4 < cap) {
        buf[used++] = '.';
        buf[used++] = '.';
        buf[used++] = '.';
    }
    buf[used] = '\0';
    return buf;
}
