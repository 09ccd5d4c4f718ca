/* The `porta` command: its output and its exit codes on good and bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"

/* Runs `porta ARGS`, capturing stdout and stderr; returns the exit code. */
static int run_cli(const char *args, char *output, size_t cap) {
    char command[512];
    snprintf(command, sizeof command, "'%s' %s 2>&1", PORTA_CLI_PATH, args);
    FILE *pipe = popen(command, "r");
    if (!pipe) return -1;
    size_t used = fread(output, 1, cap - 1, pipe);
    output[used] = '\0';
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
