/* A one-line progress bar on stderr for long work (building a large
 * graph's kernels, a comparison over many devices): drawn only when stderr
 * is a terminal and only once the work has taken longer than half a second,
 * so short work and redirected output stay quiet. PORTA_PROGRESS=0 turns it
 * off, PORTA_PROGRESS=1 on even when stderr is not a terminal.
 *
 *     porta_progress p;
 *     porta_progress_begin(&p, "building kernels", count);
 *     for (...) { ...; porta_progress_advance(&p, 1); }
 *     porta_progress_end(&p);
 *
 * One reporter belongs to one thread; it allocates nothing. */
#ifndef PORTA_PROGRESS_H
#define PORTA_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PORTA_PROGRESS_DELAY_NS 500000000u  /* quiet for the first half second */
#define PORTA_PROGRESS_REDRAW_NS 100000000u /* at most ten lines a second */

typedef struct porta_progress {
    const char *what; /* "building kernels": must outlive the reporter */
    int64_t total;    /* steps expected; 0 or less when unknown */
    int64_t done;
    uint64_t start_ns, last_draw_ns;
    uint64_t delay_ns; /* before the first line (tests lower it) */
    int fd;
    bool enabled, drawn;
} porta_progress;

/* Reports on stderr. */
PORTA_API void porta_progress_begin(porta_progress *p, const char *what, int64_t total);
/* Reports on `fd`, deciding by whether `fd` is a terminal. */
PORTA_API void porta_progress_begin_on(porta_progress *p, int fd, const char *what, int64_t total);
PORTA_API void porta_progress_advance(porta_progress *p, int64_t steps);
/* Finishes the line (with a newline) if one was drawn. */
PORTA_API void porta_progress_end(porta_progress *p);

#ifdef __cplusplus
}
#endif

#endif
