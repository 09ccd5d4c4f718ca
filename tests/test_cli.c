/* The `porta` command: its output and its exit codes on good and bad usage. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Runs `porta ARGS`, capturing stdout and stderr; returns the exit code. */
static int run_cli(const char *args, char *output, size_t cap) {
    char command[512];
    snprintf(command, sizeof command, "'%s' %s", PORTA_CLI_PATH, args);
    return test_run_command(command, output, cap);
}

TEST(test_cli_version_and_help) {
    char out[4096];
    CHECK(run_cli("--version", out, sizeof out) == 0);
    CHECK_MSG(strstr(out, porta_version_string()) != NULL, "version output: %s", out);
    CHECK(run_cli("--help", out, sizeof out) == 0);
    CHECK(strstr(out, "devices") != NULL && strstr(out, "usage: porta") != NULL);
    CHECK(run_cli("devices --help", out, sizeof out) == 0);
    CHECK(strstr(out, "usage: porta devices") != NULL);
}

TEST(test_cli_devices_lists_the_cpu) {
    char out[4096];
    CHECK(run_cli("devices", out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "porta:0") && strstr(out, "cpu"), "devices output: %s", out);
}

/* Backends that cannot run here are named, with the reason. */
TEST(test_cli_devices_says_why_a_backend_is_unavailable) {
    char out[4096];
    CHECK(run_cli("devices", out, sizeof out) == 0);
    bool opencl_listed = strstr(out, " opencl ") != NULL;
    bool opencl_explained = strstr(out, "opencl: unavailable (") != NULL;
    CHECK_MSG(opencl_listed != opencl_explained, "devices output: %s", out);
    setenv("PORTA_OPENCL_LIBRARY", "libno-such-opencl.so", 1);
    int code = run_cli("devices", out, sizeof out);
    unsetenv("PORTA_OPENCL_LIBRARY");
    CHECK(code == 0);
    CHECK_MSG(strstr(out, "opencl: unavailable (PORTA_OPENCL_LIBRARY=libno-such-opencl.so") &&
                  !strstr(out, " opencl "),
              "devices output: %s", out);
}

/* PORTA_VISIBLE_DEVICES picks and orders devices; a bad entry is named. */
TEST(test_cli_visible_devices_filter_and_order) {
    char out[4096];
    setenv("PORTA_VISIBLE_DEVICES", "cpu", 1);
    CHECK(run_cli("devices", out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "porta:0  cpu") && !strstr(out, "porta:1"), "devices output: %s", out);
    setenv("PORTA_VISIBLE_DEVICES", "7,cpu,bogus", 1);
    CHECK(run_cli("devices", out, sizeof out) == 0);
    unsetenv("PORTA_VISIBLE_DEVICES");
    CHECK_MSG(strstr(out, "'bogus' is neither a device index") && strstr(out, "porta:0  cpu"),
              "devices output: %s", out);
}

TEST(test_cli_bad_usage_is_a_one_line_error) {
    char out[4096];
    CHECK(run_cli("", out, sizeof out) == 2);
    CHECK(strstr(out, "missing command") != NULL);
    CHECK(run_cli("frobnicate", out, sizeof out) == 2);
    CHECK(strstr(out, "unknown command 'frobnicate'") != NULL);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* exactly one line */
    CHECK(run_cli("devices extra", out, sizeof out) == 2);
    CHECK(strstr(out, "unexpected argument 'extra'") != NULL);
}
