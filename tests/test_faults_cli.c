/* PORTA_FAULTS on the command line: `porta run` on every CPU and OpenCL
 * device with a device allocation, a driver call, a kernel build or the
 * output's write failing exits 1 with the error and writes no output; a
 * malformed value is said once and injects nothing. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "porta_io.h"
#include "test.h"

/* Under AddressSanitizer the commands (on the CPU and OpenCL devices
 * only) run without XLA's PJRT plugin (PORTA_PJRT=0; the devices keep their
 * numbers, PJRT's come last): with PoCL's and XLA's threads both alive at
 * exit, LeakSanitizer's own thread-stopping tracer crashes (signal 11)
 * before it checks for leaks. */
#if defined(__SANITIZE_ADDRESS__)
#define WITHOUT_PJRT_UNDER_ASAN "PORTA_PJRT=0 "
#else
#define WITHOUT_PJRT_UNDER_ASAN ""
#endif

/* The command's exit status, its stdout and stderr in output. */
static int run_porta(const char *environment, const char *args, char *output, size_t cap) {
    char command[4096];
    snprintf(command, sizeof command, WITHOUT_PJRT_UNDER_ASAN "%s '%s' %s", environment,
             PORTA_CLI_PATH, args);
    return test_run_command(command, output, cap);
}

/* y = x + 1 with x [3]. */
static const char GRAPH[] =
    "{\"version\": [1, 0],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [3]}], \"weights\": [],"
    " \"nodes\": [{\"op\": \"add.Tensor\", \"args\": [{\"tensor\": \"x\"}, {\"int\": 1},"
    "  {\"int\": 1}], \"outputs\": [\"y\"]}],"
    " \"outputs\": [\"y\"]}";

typedef struct fixture {
    char dir[512], model[600], input[600], output[600], cache[600];
} fixture;

static bool setup(fixture *f) {
    const char *base = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/porta_faults_cli_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(f->dir)) return false;
    snprintf(f->model, sizeof f->model, "%s/m.porta", f->dir);
    snprintf(f->input, sizeof f->input, "%s/in.safetensors", f->dir);
    snprintf(f->output, sizeof f->output, "%s/out.safetensors", f->dir);
    snprintf(f->cache, sizeof f->cache, "%s/cache", f->dir);
    porta_tensor *x = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, 1, (int64_t[]){3},
                                                  (float[]){1, 2, 3}, &x);
    porta_safetensors_pair meta[2] = {{"porta.format", "1.0"}, {"porta.graph", GRAPH}};
    porta_safetensors_entry input = {"x", x};
    if (!status) status = porta_safetensors_save(f->model, NULL, 0, meta, 2);
    if (!status) status = porta_safetensors_save(f->input, &input, 1, NULL, 0);
    porta_tensor_release(x);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    return true;
}

/* Files in the fixture's directory besides the model, the input and the
 * kernel cache: the output, or what a failed write left. */
static int stray_files(const fixture *f) {
    DIR *dir = opendir(f->dir);
    int n = 0;
    for (struct dirent *e; dir && (e = readdir(dir));)
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "m.porta") &&
             strcmp(e->d_name, "in.safetensors") && strcmp(e->d_name, "cache");
    if (dir) closedir(dir);
    return n;
}

/* Runs `args` with PORTA_FAULTS=rule: expects exit status 1, `expected`
 * in the output and no file written. */
static void check_fails(const fixture *f, int d, const char *args, const char *rule,
                        const char *expected) {
    char environment[1200], out[8192];
    snprintf(environment, sizeof environment, "PORTA_CACHE_DIR='%s' PORTA_FAULTS=%s", f->cache,
             rule);
    int rc = run_porta(environment, args, out, sizeof out);
    CHECK_MSG(rc == 1 && strstr(out, expected), "porta:%d %s: rc %d, expected 1 and \"%s\": %s",
              d, rule, rc, expected, out);
    CHECK_MSG(stray_files(f) == 0, "porta:%d %s: %d files left", d, rule, stray_files(f));
}

TEST(test_faults_cli_run_fails_cleanly_on_each_fault) {
    fixture f;
    if (!setup(&f)) return;
    char environment[1200], args[2048], out[8192];
    for (int d = 0; d < porta_device_count(); d++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(d, &device) || porta_device_info_get(device, &info)) continue;
        bool opencl = !strcmp(info.backend, "opencl");
        if (!opencl && strcmp(info.backend, "cpu") != 0) continue;
        snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --device porta:%d",
                 f.model, f.input, f.output, d);
        /* OpenCL builds its kernels even in eager mode: with an empty
         * kernel cache the first one is built */
        test_remove_tree(f.cache);
        if (opencl) check_fails(&f, d, args, "build:1", "fault injected by the rule build:1");
        /* then, without faults, the same command writes the output (and
         * fills the cache, so no kernel is built or written below) */
        snprintf(environment, sizeof environment, "PORTA_CACHE_DIR='%s'", f.cache);
        CHECK_MSG(run_porta(environment, args, out, sizeof out) == 0, "porta:%d: %s", d, out);
        CHECK(access(f.output, F_OK) == 0);
        unlink(f.output);
        check_fails(&f, d, args, "alloc:1", "fault injected by the rule alloc:1");
        check_fails(&f, d, args, "driver:1", "fault injected by the rule driver:1");
        /* the output's writes: its header's length, the header, the data */
        check_fails(&f, d, args, "write:1", "No space left on device");
        check_fails(&f, d, args, "write:3", "No space left on device");
    }
    test_remove_tree(f.dir);
}

TEST(test_faults_cli_malformed_rules_are_said_and_ignored) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, f.input,
             f.output);
    int rc = run_porta("PORTA_FAULTS=alloc:zero", args, out, sizeof out);
    CHECK_MSG(rc == 0, "rc %d: %s", rc, out);
    CHECK_MSG(strstr(out, "PORTA_FAULTS is ignored") && strstr(out, "\"alloc:zero\""), "%s", out);
    CHECK(access(f.output, F_OK) == 0);
    test_remove_tree(f.dir);
}
