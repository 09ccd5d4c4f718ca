/* The progress line: "\r" redraws it in place; the end leaves it complete
 * on its own line, so the terminal keeps what took the time. */
#include "porta_progress.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/env.h"

#define BAR_WIDTH 30

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* PORTA_PROGRESS=0 or 1 decides; otherwise whether fd is a terminal. */
static bool wanted(int fd) { return core_env_int("PORTA_PROGRESS", 0, 1, isatty(fd) == 1) != 0; }

void porta_progress_begin_on(porta_progress *p, int fd, const char *what, int64_t total) {
    memset(p, 0, sizeof *p);
    p->what = what ? what : "working";
    p->total = total;
    p->fd = fd;
    p->delay_ns = PORTA_PROGRESS_DELAY_NS;
    p->enabled = wanted(fd);
    if (p->enabled) p->start_ns = now_ns();
}

void porta_progress_begin(porta_progress *p, const char *what, int64_t total) {
    porta_progress_begin_on(p, STDERR_FILENO, what, total);
}

static void draw(porta_progress *p, uint64_t now, const char *end) {
    char line[256];
    double seconds = (double)(now - p->start_ns) * 1e-9;
    int n;
    if (p->total > 0) {
        int64_t done = p->done < p->total ? p->done : p->total;
        int filled = (int)(done * BAR_WIDTH / p->total);
        char bar[BAR_WIDTH + 1];
        memset(bar, '#', (size_t)filled);
        memset(bar + filled, '.', (size_t)(BAR_WIDTH - filled));
        bar[BAR_WIDTH] = '\0';
        n = snprintf(line, sizeof line, "\rporta: %s [%s] %lld/%lld %.1fs%s", p->what, bar,
                     (long long)done, (long long)p->total, seconds, end);
    } else {
        n = snprintf(line, sizeof line, "\rporta: %s %lld %.1fs%s", p->what, (long long)p->done,
                     seconds, end);
    }
    if (n < 0) return;
    size_t len = (size_t)n < sizeof line ? (size_t)n : sizeof line - 1;
    /* A failed write only loses a progress line. */
    ssize_t written = write(p->fd, line, len);
    (void)written;
    p->drawn = true;
    p->last_draw_ns = now;
}

void porta_progress_advance(porta_progress *p, int64_t steps) {
    if (!p->enabled) return;
    p->done += steps;
    uint64_t now = now_ns();
    if (now - p->start_ns < p->delay_ns) return;
    if (p->drawn && now - p->last_draw_ns < PORTA_PROGRESS_REDRAW_NS) return;
    draw(p, now, "");
}

void porta_progress_end(porta_progress *p) {
    if (p->enabled && p->drawn) draw(p, now_ns(), "\n");
    p->enabled = false;
}
