/* porta_explain_*: a report of the kernels each flushed trace runs. */
#include "compiler/explain.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t explain_lock = PTHREAD_MUTEX_INITIALIZER;
static bool explaining;
static bool explain_source;
static char *report;
static size_t report_length, report_capacity;

void porta_explain_start(bool with_source) {
    pthread_mutex_lock(&explain_lock);
    free(report);
    report = NULL;
    report_length = report_capacity = 0;
    explaining = true;
    explain_source = with_source;
    pthread_mutex_unlock(&explain_lock);
}

char *porta_explain_stop(void) {
    pthread_mutex_lock(&explain_lock);
    char *taken = report ? report : calloc(1, 1);
    report = NULL;
    report_length = report_capacity = 0;
    explaining = false;
    pthread_mutex_unlock(&explain_lock);
    return taken;
}

bool explain_active(bool *with_source) {
    if (with_source) *with_source = explain_source;
    return explaining;
}

void explain_printf(const char *fmt, ...) {
    pthread_mutex_lock(&explain_lock);
    if (!explaining) goto done;
    va_list args;
    va_start(args, fmt);
    int needed = vsnprintf(NULL, 0, fmt, args);
    va_end(args);
    if (needed < 0) goto done;
    if (report_length + (size_t)needed + 1 > report_capacity) {
        size_t capacity = report_capacity ? report_capacity : 1024;
        while (capacity < report_length + (size_t)needed + 1) capacity *= 2;
        char *grown = realloc(report, capacity);
        if (!grown) goto done; /* the report is best effort; the run is not */
        report = grown;
        report_capacity = capacity;
    }
    va_start(args, fmt);
    vsnprintf(report + report_length, report_capacity - report_length, fmt, args);
    va_end(args);
    report_length += (size_t)needed;
done:
    pthread_mutex_unlock(&explain_lock);
}
