/* Integer settings read from the environment (PORTA_NUM_THREADS, ...):
 * one parser, so every variable treats a bad value the same way. */
#ifndef PORTA_CORE_ENV_H
#define PORTA_CORE_ENV_H

#include <stdint.h>

/* The value of the integer variable `name`, or `fallback` when it is unset
 * or empty. A value that is not a whole decimal integer, or is below `min`,
 * gives `fallback`; one above `max` gives `max`. Either way stderr gets one
 * line per variable and process naming the variable, the value given, the
 * range expected and the value used instead, since a setting silently
 * ignored looks like a setting obeyed. */
int64_t core_env_int(const char *name, int64_t min, int64_t max, int64_t fallback);

#endif
