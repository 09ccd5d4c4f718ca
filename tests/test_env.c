/* The environment's integer settings (core/env.h): values kept, bad ones
 * replaced with one warning naming the variable, the value and what is
 * used instead; and PORTA_NUM_THREADS, which used to start a thread per
 * unit asked for (99999 aborted the process). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/cpu/threadpool.h"
#include "core/env.h"
#include "test.h"

/* core_env_int(name, min, max, fallback) with `name` set to `value`; its
 * stderr is caught into `said`. */
static int64_t read_setting(const char *name, const char *value, int64_t min, int64_t max,
                            int64_t fallback, char *said, size_t cap) {
    setenv(name, value, 1);
    fflush(stderr);
    int saved = dup(2);
    FILE *caught = tmpfile();
    said[0] = '\0';
    if (saved < 0 || !caught) {
        test_fail(__FILE__, __LINE__, "cannot catch stderr");
        if (caught) fclose(caught);
        if (saved >= 0) close(saved);
        return core_env_int(name, min, max, fallback);
    }
    dup2(fileno(caught), 2);
    int64_t value_read = core_env_int(name, min, max, fallback);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(caught);
    size_t n = fread(said, 1, cap - 1, caught);
    said[n] = '\0';
    fclose(caught);
    unsetenv(name);
    return value_read;
}

TEST(env_int_keeps_good_values_and_replaces_bad_ones_with_a_warning) {
    char said[512];
    CHECK(core_env_int("PORTA_TEST_ENV_UNSET", 1, 10, 4) == 4);
    CHECK(read_setting("PORTA_TEST_ENV_EMPTY", "", 1, 10, 4, said, sizeof said) == 4);
    CHECK(read_setting("PORTA_TEST_ENV_GOOD", "7", 1, 10, 4, said, sizeof said) == 7);
    CHECK_MSG(!said[0], "a good value warned: %s", said);
    CHECK(read_setting("PORTA_TEST_ENV_EDGE", "10", 1, 10, 4, said, sizeof said) == 10);
    CHECK_MSG(!said[0], "a good value warned: %s", said);

    static const struct {
        const char *name, *value;
        int64_t want;
        const char *problem;
    } bad[] = {
        {"PORTA_TEST_ENV_WORD", "abc", 4, "not an integer"},
        {"PORTA_TEST_ENV_TAIL", "3x", 4, "not an integer"},
        {"PORTA_TEST_ENV_FLOAT", "2.5", 4, "not an integer"},
        {"PORTA_TEST_ENV_ZERO", "0", 4, "too small"},
        {"PORTA_TEST_ENV_NEGATIVE", "-1", 4, "too small"},
        {"PORTA_TEST_ENV_HUGE_NEGATIVE", "-99999999999999999999999", 4, "too small"},
        {"PORTA_TEST_ENV_LARGE", "99999", 10, "too large"},
        {"PORTA_TEST_ENV_HUGE", "99999999999999999999999", 10, "too large"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t got = read_setting(bad[i].name, bad[i].value, 1, 10, 4, said, sizeof said);
        CHECK_MSG(got == bad[i].want, "%s=%s gave %lld, expected %lld", bad[i].name,
                  bad[i].value, (long long)got, (long long)bad[i].want);
        char expected[128];
        snprintf(expected, sizeof expected, "%s=\"%s\" is %s", bad[i].name, bad[i].value,
                 bad[i].problem);
        CHECK_MSG(strstr(said, expected), "warning lacks '%s': '%s'", expected, said);
        snprintf(expected, sizeof expected, "from 1 to 10); using %lld\n", (long long)bad[i].want);
        CHECK_MSG(strstr(said, expected), "warning lacks '%s': '%s'", expected, said);
        CHECK_MSG(strchr(said, '\n') == strrchr(said, '\n'), "more than one line: '%s'", said);
        /* said once per variable */
        CHECK(read_setting(bad[i].name, bad[i].value, 1, 10, 4, said, sizeof said) == bad[i].want);
        CHECK_MSG(!said[0], "%s warned twice: %s", bad[i].name, said);
    }
}

/* A thread count far past the machine is lowered to the pool's limit
 * instead of starting a thread per unit; zero or a word keeps one per core. */
TEST(env_num_threads_is_bounded) {
    int original = porta_get_num_threads();
    CHECK(cpu_thread_limit() >= 64);
    setenv("PORTA_NUM_THREADS", "99999", 1);
    CHECK_OK(porta_set_num_threads(0)); /* 0 reads the variable again */
    CHECK(porta_get_num_threads() == cpu_thread_limit());
    setenv("PORTA_NUM_THREADS", "abc", 1);
    CHECK_OK(porta_set_num_threads(0));
    CHECK(porta_get_num_threads() >= 1 && porta_get_num_threads() < cpu_thread_limit());
    unsetenv("PORTA_NUM_THREADS");
    CHECK_ERR(porta_set_num_threads(cpu_thread_limit() + 1), PORTA_ERR_INVALID_ARGUMENT,
              "a count from 1 to");
    CHECK_OK(porta_set_num_threads(original));
}
