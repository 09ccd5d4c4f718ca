/* The explain report (porta_explain_start/stop): the executor appends a
 * line per kernel of every trace it runs while explaining. */
#ifndef PORTA_COMPILER_EXPLAIN_H
#define PORTA_COMPILER_EXPLAIN_H

#include "porta.h"

/* Whether a report is being collected, and whether it wants sources. */
bool explain_active(bool *with_source);
void explain_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
