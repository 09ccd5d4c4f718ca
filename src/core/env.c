/* The environment's integer settings, parsed and checked in one place. */
#include "core/env.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The variables warned about so far: each bad setting is said once, however
 * often it is read (a progress bar reads its variable per bar). */
#define WARNED_MAX 32
static pthread_mutex_t warned_lock = PTHREAD_MUTEX_INITIALIZER;
static char warned[WARNED_MAX][64]; /* guarded by warned_lock */
static int warned_count;

static bool first_warning(const char *name) {
    pthread_mutex_lock(&warned_lock);
    bool first = true;
    for (int i = 0; i < warned_count && first; i++)
        first = strncmp(warned[i], name, sizeof warned[i] - 1) != 0;
    if (first && warned_count < WARNED_MAX)
        snprintf(warned[warned_count++], sizeof warned[0], "%s", name);
    pthread_mutex_unlock(&warned_lock);
    return first;
}

static void warn(const char *name, const char *text, const char *problem, int64_t min,
                 int64_t max, int64_t used) {
    if (!first_warning(name)) return;
    fprintf(stderr,
            "porta: %s=\"%s\" %s (expected an integer from %" PRId64 " to %" PRId64
            "); using %" PRId64 "\n",
            name, text, problem, min, max, used);
}

int64_t core_env_int(const char *name, int64_t min, int64_t max, int64_t fallback) {
    const char *text = getenv(name);
    if (!text || !*text) return fallback;
    char *end = NULL;
    errno = 0;
    long long value = strtoll(text, &end, 10);
    if (end == text || *end != '\0') {
        warn(name, text, "is not an integer", min, max, fallback);
        return fallback;
    }
    if ((errno == ERANGE && value < 0) || value < min) {
        warn(name, text, "is too small", min, max, fallback);
        return fallback;
    }
    if (errno == ERANGE || value > max) {
        warn(name, text, "is too large", min, max, max);
        return max;
    }
    return value;
}
