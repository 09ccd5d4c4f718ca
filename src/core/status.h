/* Errors as values, the internal part: shapes in messages and propagation
 * with cleanup. Making statuses (porta_error, porta_error_context) and
 * PORTA_TRY are public, in porta.h. */
#ifndef PORTA_CORE_STATUS_H
#define PORTA_CORE_STATUS_H

#include "porta.h"

/* Writes "[2, 3]" into buf (always NUL-terminated) and returns buf. */
const char *core_format_shape(char *buf, size_t cap, int rank, const int64_t *sizes);
#define CORE_SHAPE_STR_CAP 256

/* Assigns the status to `var` and jumps to `label` on error, for functions
 * that must release what they hold before returning. */
#define CORE_TRY_GOTO(var, expr, label) \
    do {                                 \
        (var) = (expr);                  \
        if (var) goto label;             \
    } while (0)

#endif
