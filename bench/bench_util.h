/* Helpers every C benchmark shares: a monotonic clock, medians of samples,
 * and exiting with the message of a failed call. */
#ifndef PORTA_BENCH_UTIL_H
#define PORTA_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "porta.h"

static inline double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts samples in place. */
static inline double median(double *samples, int count) {
    qsort(samples, (size_t)count, sizeof *samples, compare_doubles);
    return samples[count / 2];
}

static inline void die_on(porta_status *status, const char *what) {
    if (!status) return;
    fprintf(stderr, "%s: %s\n", what, porta_status_message(status));
    exit(1);
}

#endif
