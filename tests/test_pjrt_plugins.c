/* The PJRT probe with plugins that cannot be used (stand-ins built from
 * tests/pjrt_fake/): `porta devices` names each one with its own reason,
 * a plugin that hangs in its initialization is reported as timed out, the
 * whole probe ends within its deadline, and libtpu gets
 * TPU_SKIP_MDS_QUERY=1 unless the user set it. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "test.h"

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

#define FAKE(name) PORTA_PJRT_FAKE_DIR "/" name ".so"

static void expect_line(const char *out, const char *line) {
    CHECK_MSG(strstr(out, line) != NULL, "expected a line with \"%s\" in:\n%s", line, out);
}

TEST(test_pjrt_unusable_plugins_are_each_reported_within_the_deadline) {
    char out[8192];
    double begin = seconds_now();
    int code = test_run_command(
        "PORTA_PJRT_TIMEOUT=2 PORTA_PJRT_PLUGINS=" FAKE("fake_pjrt_wrong_major") ":" FAKE(
            "fake_pjrt_create_fails") ":" FAKE("fake_pjrt_init_hangs") ":" FAKE(
            "no_such_plugin") ":" FAKE("libtpu_fake") " " PORTA_CLI_PATH " devices",
        out, sizeof out);
    double seconds = seconds_now() - begin;
    CHECK_MSG(code == 0, "porta devices exited with %d:\n%s", code, out);
    expect_line(out, "pjrt: unavailable (fake_pjrt_wrong_major.so: PJRT API version 1.0; "
                     "Porta needs 0.");
    /* its own error, once asked without the CPU plugin's option it refuses */
    expect_line(out, "pjrt: unavailable (fake_pjrt_create_fails.so: PJRT Client_Create: fake "
                     "plugin: no device of this kind is attached)");
    /* after what is left of the 2 s once the plugins before it were tried */
    expect_line(out, "pjrt: unavailable (fake_pjrt_init_hangs.so: timed out after ");
    expect_line(out, "pjrt: unavailable (no_such_plugin.so: could not be loaded: ");
    /* the time was spent: later plugins are loaded, checked, not started */
    expect_line(out, "pjrt: unavailable (libtpu_fake.so: not initialized: the PJRT probe's "
                     "time (PORTA_PJRT_TIMEOUT) ran out");
    /* the hanging plugin's 2 s, and the process start; never its minute */
    CHECK_MSG(seconds < 10, "the probe took %.1f s", seconds);
}

TEST(test_pjrt_libtpu_skips_the_metadata_query_unless_told_otherwise) {
    char out[8192];
    test_run_command("env -u TPU_SKIP_MDS_QUERY PORTA_PJRT_PLUGINS=" FAKE(
                         "libtpu_fake") " " PORTA_CLI_PATH " devices",
                     out, sizeof out);
    expect_line(out, "pjrt: unavailable (libtpu_fake.so: PJRT Plugin_Initialize: "
                     "TPU_SKIP_MDS_QUERY=1)");
    test_run_command("TPU_SKIP_MDS_QUERY=0 PORTA_PJRT_PLUGINS=" FAKE(
                         "libtpu_fake") " " PORTA_CLI_PATH " devices",
                     out, sizeof out);
    expect_line(out, "(libtpu_fake.so: PJRT Plugin_Initialize: TPU_SKIP_MDS_QUERY=0)");
}

TEST(test_pjrt_can_be_switched_off) {
    char out[8192];
    test_run_command("PORTA_PJRT=0 " PORTA_CLI_PATH " devices", out, sizeof out);
    expect_line(out, "pjrt: unavailable (switched off by PORTA_PJRT=0)");
    CHECK_MSG(strstr(out, " pjrt ") == NULL, "a pjrt device with PORTA_PJRT=0:\n%s", out);
}
