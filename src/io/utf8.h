/* UTF-8 validation and encoding, shared by the JSON parser and the writers
 * of formats whose strings must be valid UTF-8. */
#ifndef PORTA_IO_UTF8_H
#define PORTA_IO_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length (1-4) of the well-formed UTF-8 sequence at s, which has
 * `available` bytes, or 0 when it is not one: a stray continuation byte, a
 * truncated sequence, an overlong form, a surrogate (U+D800-U+DFFF) or a
 * code point past U+10FFFF. */
int utf8_sequence_length(const unsigned char *s, size_t available);

/* Whether all `length` bytes are well-formed UTF-8; if not, *bad_offset
 * (when not NULL) receives the offset of the first bad sequence. */
bool utf8_is_valid(const char *s, size_t length, size_t *bad_offset);

/* Writes the encoding of code point cp (at most U+10FFFF, not a surrogate)
 * to out and returns its length in bytes. */
int utf8_encode(uint32_t cp, char out[4]);

/* A short printable rendering of s for error messages: at most about 60
 * bytes, quoted, non-ASCII and control bytes as \xNN. Returns buf. */
const char *utf8_excerpt(const char *s, size_t length, char *buf, size_t cap);
#define UTF8_EXCERPT_CAP 280

#endif
