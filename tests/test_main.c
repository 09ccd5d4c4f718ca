/* The test runner: runs every registered test (or those whose name contains
 * argv[1]), checks each for leaked libporta memory, and ends with the line
 * "N passed, N failed". */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

#define MAX_TESTS 4096

static struct {
    const char *name;
    test_fn fn;
} tests[MAX_TESTS];
static int test_count;
static int current_failures;

void test_register(const char *name, test_fn fn) {
    if (test_count == MAX_TESTS) {
        fprintf(stderr, "too many tests (limit %d)\n", MAX_TESTS);
        exit(2);
    }
    tests[test_count].name = name;
    tests[test_count].fn = fn;
    test_count++;
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    current_failures++;
    if (current_failures > 20) return; /* keep a broken test's output short */
    fprintf(stderr, "    %s:%d: ", file, line);
    va_list args;
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
}

void test_check_error(const char *file, int line, const char *expr, porta_status *status,
                      porta_code code, const char *needle) {
    if (!status) {
        test_fail(file, line, "%s succeeded; expected error '%s'", expr, porta_code_name(code));
        return;
    }
    if (porta_status_code(status) != code)
        test_fail(file, line, "%s: expected error '%s', got '%s': %s", expr,
                  porta_code_name(code), porta_code_name(porta_status_code(status)),
                  porta_status_message(status));
    else if (needle && !strstr(porta_status_message(status), needle))
        test_fail(file, line, "%s: message '%s' lacks '%s'", expr,
                  porta_status_message(status), needle);
    porta_status_free(status);
}

static int compare_names(const void *a, const void *b) {
    const char *const *na = a, *const *nb = b;
    return strcmp(*na, *nb);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    /* Registration order follows link order; sort for stable output. */
    qsort(tests, (size_t)test_count, sizeof tests[0], compare_names);
    int passed = 0, failed = 0;
    for (int i = 0; i < test_count; i++) {
        if (filter && !strstr(tests[i].name, filter)) continue;
        current_failures = 0;
        uint64_t before = porta_memory_allocated();
        tests[i].fn();
        porta_set_memory_limit(0); /* a test that set a limit may have failed early */
        uint64_t after = porta_memory_allocated();
        if (after != before)
            test_fail(__FILE__, __LINE__, "leaked %lld bytes of libporta memory",
                      (long long)(after - before));
        if (current_failures) {
            failed++;
            printf("FAIL %s (%d failures)\n", tests[i].name, current_failures);
        } else {
            passed++;
            printf("ok   %s\n", tests[i].name);
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
