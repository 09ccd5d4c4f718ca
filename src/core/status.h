/* Errors as values: constructing, propagating and formatting statuses. */
#ifndef PORTA_CORE_STATUS_H
#define PORTA_CORE_STATUS_H

#include "porta.h"

/* A new status with a printf-style message. Never returns NULL: when memory
 * for the message itself runs out, a static out-of-memory status is used. */
porta_status *porta_error(porta_code code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prefixes an existing status's message with context ("in matmul: ...")
 * and returns the same status. */
porta_status *porta_error_context(porta_status *status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Writes "[2, 3]" into buf (always NUL-terminated) and returns buf. */
const char *porta_format_shape(char *buf, size_t cap, int rank, const int64_t *sizes);
#define PORTA_SHAPE_STR_CAP 256

#define PORTA_TRY(expr)                          \
    do {                                         \
        porta_status *porta_try_status_ = (expr);\
        if (porta_try_status_) return porta_try_status_; \
    } while (0)

/* Assigns the status to `var` and jumps to `label` on error, for functions
 * that must release what they hold before returning. */
#define PORTA_TRY_GOTO(var, expr, label) \
    do {                                 \
        (var) = (expr);                  \
        if (var) goto label;             \
    } while (0)

#endif
