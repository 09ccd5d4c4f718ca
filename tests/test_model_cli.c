/* porta run / bench / inspect on a hand-written .porta model: outputs,
 * exit statuses (0 done, 1 refused or failed, 2 bad usage) and messages. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "porta_io.h"
#include "test.h"

static int run_porta(const char *args, char *output, size_t cap) {
    char line[2600];
    snprintf(line, sizeof line, "'%s' %s", PORTA_CLI_PATH, args);
    return test_run_command(line, output, cap);
}

/* As run_porta, ended after `seconds` (exit code 124) if still running. */
static int run_porta_within(int seconds, const char *args, char *output, size_t cap) {
    char line[2600];
    snprintf(line, sizeof line, "timeout %d '%s' %s", seconds, PORTA_CLI_PATH, args);
    return test_run_command(line, output, cap);
}

/* y = x * w + 1 with x [n, 2] (n symbolic), w [2]. */
static const char GRAPH[] =
    "{\"version\": [1, 0], \"symbols\": [{\"name\": \"n\", \"min\": 1}],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"n\", 2]}],"
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [2]}],"
    " \"nodes\": [{\"op\": \"mul.Tensor\", \"args\": [{\"tensor\": \"x\"}, {\"tensor\": \"w\"}],"
    "  \"outputs\": [\"xw\"]},"
    "  {\"op\": \"add.Tensor\", \"args\": [{\"tensor\": \"xw\"}, {\"int\": 1}, {\"int\": 1}],"
    "  \"outputs\": [\"y\"]}],"
    " \"outputs\": [\"y\"]}";

typedef struct fixture {
    char dir[512], model[600], input[600], output[600];
} fixture;

static bool setup(fixture *f) {
    const char *base = getenv("TMPDIR");
    snprintf(f->dir, sizeof f->dir, "%s/porta_model_cli_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(f->dir)) return false;
    snprintf(f->model, sizeof f->model, "%s/m.porta", f->dir);
    snprintf(f->input, sizeof f->input, "%s/in.safetensors", f->dir);
    snprintf(f->output, sizeof f->output, "%s/out.safetensors", f->dir);
    porta_tensor *w = NULL, *x = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, 1, (int64_t[]){2},
                                                  (float[]){2, -3}, &w);
    if (!status)
        status = porta_tensor_from_host(test_cpu(), PORTA_F32, 2, (int64_t[]){3, 2},
                                        (float[]){1, 2, 3, 4, 5, 6}, &x);
    porta_safetensors_pair meta[2] = {{"porta.format", "1.0"}, {"porta.graph", GRAPH}};
    porta_safetensors_entry weight = {"w", w}, input = {"x", x};
    if (!status) status = porta_safetensors_save(f->model, &weight, 1, meta, 2);
    if (!status) status = porta_safetensors_save(f->input, &input, 1, NULL, 0);
    if (w) porta_tensor_release(w);
    if (x) porta_tensor_release(x);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    return true;
}

TEST(test_model_cli_run_writes_the_outputs) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    for (int d = 0; d < porta_device_count(); d++) {
        snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --device porta:%d",
                 f.model, f.input, f.output, d);
        CHECK_MSG(run_porta(args, out, sizeof out) == 0, "porta:%d: %s", d, out);
        porta_safetensors *file = NULL;
        porta_tensor *y = NULL;
        CHECK_OK(porta_safetensors_open(f.output, &file));
        porta_status *status = porta_safetensors_get(file, "y", test_cpu(), &y);
        porta_safetensors_close(file);
        CHECK_OK(status);
        double *got = test_to_doubles(y);
        const double want[6] = {3, -5, 7, -11, 11, -17};
        if (got) test_close("y", got, want, 6, 0, 0);
        free(got);
        porta_tensor_release(y);
    }
    test_remove_tree(f.dir);
}

TEST(test_model_cli_errors_and_exit_statuses) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    CHECK(run_porta("run", out, sizeof out) == 2 && strstr(out, "porta run: missing MODEL"));
    snprintf(args, sizeof args, "run '%s' --input '%s'", f.model, f.input);
    CHECK(run_porta(args, out, sizeof out) == 2 && strstr(out, "missing --output FILE"));
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --device porta:99", f.model,
             f.input, f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "device index 99"), "%s", out);
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --frobnicate", f.model,
             f.input, f.output);
    CHECK(run_porta(args, out, sizeof out) == 2 &&
          strstr(out, "unexpected argument '--frobnicate'"));
    /* A one-tensor file of the wrong shape is taken, then refused. */
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, f.model,
             f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 &&
                  strstr(out, "model input 0 (x): expected 2 dims, got shape [2]"),
              "%s", out);
    /* Two tensors, neither named x nor 0. */
    char two[700];
    snprintf(two, sizeof two, "%s/two.safetensors", f.dir);
    porta_tensor *t = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 2, (int64_t[]){1, 2}, 0, &t));
    porta_safetensors_entry entries[2] = {{"a", t}, {"b", t}};
    porta_status *status = porta_safetensors_save(two, entries, 2, NULL, 0);
    porta_tensor_release(t);
    CHECK_OK(status);
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, two, f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 &&
                  strstr(out, "holds no tensor for input 0: expected one named 'x' or '0'"),
              "%s", out);
    /* Weights alone are not a model. */
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.input, f.input,
             f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 &&
                  strstr(out, "a safetensors file without a model"),
              "%s", out);
    snprintf(args, sizeof args, "bench '%s' --iterations 0", f.model);
    CHECK(run_porta(args, out, sizeof out) == 2 && strstr(out, "--iterations expects a count"));
    test_remove_tree(f.dir);
}

TEST(test_model_cli_inspect_and_bench) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    snprintf(args, sizeof args, "inspect '%s'", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 && strstr(out, "format: porta 1.0") &&
                  strstr(out, "[n, 2]") && strstr(out, "weights: 1, parameters: 2") &&
                  strstr(out, "nodes: 2, distinct ops: 2") && strstr(out, "1  mul.Tensor"),
              "%s", out);
    snprintf(args, sizeof args, "inspect '%s'", f.input);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 && strstr(out, "tensors: 1") &&
                  strstr(out, "float32  [3, 2]") && !strstr(out, "format:"),
              "%s", out);
    char json[700];
    snprintf(json, sizeof json, "%s/bench.json", f.dir);
    snprintf(args, sizeof args,
             "bench '%s' --devices all --iterations 3 --warmup 1 --size n=4 --json '%s'",
             f.model, json);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 && strstr(out, "batch 4") &&
                  strstr(out, "porta:0  cpu"),
              "%s", out);
    FILE *file = fopen(json, "r");
    CHECK(file != NULL);
    if (file) {
        size_t n = fread(out, 1, sizeof out - 1, file);
        out[n] = '\0';
        fclose(file);
        CHECK_MSG(strstr(out, "\"device\": \"porta:0\"") && strstr(out, "\"p99_ms\""), "%s", out);
    }
    test_remove_tree(f.dir);
}

static mode_t kind_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0;
}

/* --output through a symbolic link replaces the file it leads to; a FIFO
 * or a device node there is refused and left as it is. */
TEST(test_model_cli_output_links_fifos_and_devices) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192], link[700], fifo[700], device[700];
    snprintf(link, sizeof link, "%s/link.safetensors", f.dir);
    CHECK(symlink("out.safetensors", link) == 0);
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, f.input, link);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0, "%s", out);
    CHECK(kind_of(link) == S_IFLNK && kind_of(f.output) == S_IFREG);
    snprintf(fifo, sizeof fifo, "%s/fifo", f.dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, f.input, fifo);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 && strstr(out, fifo) &&
                  strstr(out, "expected a regular file to replace or a new name, got a FIFO"),
              "%s", out);
    CHECK(kind_of(fifo) == S_IFIFO);
    if (geteuid() == 0) {
        snprintf(device, sizeof device, "%s/null", f.dir);
        CHECK(mknod(device, S_IFCHR | 0666, makedev(1, 3)) == 0);
        snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s'", f.model, f.input,
                 device);
        CHECK_MSG(run_porta(args, out, sizeof out) == 1 && strstr(out, device) &&
                      strstr(out, "got a character device"),
                  "%s", out);
        CHECK(kind_of(device) == S_IFCHR);
    } else {
        printf("     (mknod of a character device needs root; that case skipped)\n");
    }
    test_remove_tree(f.dir);
}

/* A FIFO as MODEL or --input is refused at once (`timeout` ends a porta
 * that waits for a writer, so a regression fails instead of hanging). */
TEST(test_model_cli_fifo_inputs_are_refused_without_blocking) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192], fifo[700];
    snprintf(fifo, sizeof fifo, "%s/fifo", f.dir);
    CHECK(mkfifo(fifo, 0600) == 0);
    /* Each line takes the FIFO, the model, the output: %1$s, %2$s, %3$s. */
    const char *const commands[] = {"run '%1$s' --input '%2$s' --output '%3$s'",
                                    "run '%2$s' --input '%1$s' --output '%3$s'",
                                    "inspect '%1$s'", "bench '%1$s'"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        snprintf(args, sizeof args, commands[i], fifo, f.model, f.output);
        int code = run_porta_within(10, args, out, sizeof out);
        CHECK_MSG(code == 1 && strstr(out, "expected a regular file, got a FIFO"),
                  "porta %s: rc %d: %s", args, code, out);
    }
    test_remove_tree(f.dir);
}

TEST(test_model_cli_bench_sizes_and_json_errors) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192], json[700];
    snprintf(args, sizeof args, "bench '%s' --iterations 1 --size n=abc", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "--size n expects a size") &&
                  strstr(out, "got 'abc'"),
              "%s", out);
    const char *bad[] = {"n=0", "n=-2", "n=", "n=3x", "n=99999999999999999999", "=3", "n"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "bench '%s' --iterations 1 --size '%s'", f.model, bad[i]);
        CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "--size"), "%s: %s",
                  bad[i], out);
    }
    snprintf(args, sizeof args, "bench '%s' --iterations 1 --size nosuch=3", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "'nosuch'") &&
                  strstr(out, "they have: n"),
              "%s", out);
    /* A write that fails (here: a file size limit of 0, as a full disk
     * would) gives the OS error and rc 1. */
    snprintf(json, sizeof json, "%s/bench.json", f.dir);
    snprintf(args, sizeof args, "bench '%s' --iterations 1 --json '%s'", f.model, json);
    char limited[2200];
    snprintf(limited, sizeof limited, "trap '' XFSZ; ulimit -f 0; '%s' %s", PORTA_CLI_PATH,
             args);
    CHECK_MSG(test_run_command(limited, out, sizeof out) == 1 && strstr(out, json) &&
                  strstr(out, strerror(EFBIG)),
              "%s", out);
    CHECK(kind_of(json) == 0);
    /* A model path with a quote and a backslash stays one JSON string. */
    char odd[700];
    snprintf(odd, sizeof odd, "%s/we\"i\\rd.porta", f.dir);
    CHECK(rename(f.model, odd) == 0);
    snprintf(args, sizeof args, "bench '%s' --iterations 1 --json '%s'", odd, json);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0, "%s", out);
    FILE *file = fopen(json, "r");
    size_t got = file ? fread(out, 1, sizeof out - 1, file) : 0;
    out[got] = '\0';
    if (file) fclose(file);
    CHECK_MSG(strstr(out, "we\\\"i\\\\rd.porta\", \"iterations\""), "%s", out);
    CHECK(rename(odd, f.model) == 0);
    /* A device node is no file to replace. */
    snprintf(args, sizeof args, "bench '%s' --iterations 1 --json /dev/full", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 && strstr(out, "/dev/full") &&
                  strstr(out, "got a character device"),
              "%s", out);
    test_remove_tree(f.dir);
}

TEST(test_model_cli_run_max_seconds) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --max-seconds 0.000001",
             f.model, f.input, f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 1 && strstr(out, "over its time limit") &&
                  kind_of(f.output) == 0,
              "%s", out);
    snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --max-seconds 60", f.model,
             f.input, f.output);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 && kind_of(f.output) == S_IFREG, "%s", out);
    const char *bad[] = {"0", "-1", "abc", "inf", "nan", "1e3", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(args, sizeof args, "run '%s' --input '%s' --output '%s' --max-seconds '%s'",
                 f.model, f.input, f.output, bad[i]);
        CHECK_MSG(run_porta(args, out, sizeof out) == 2 &&
                      strstr(out, "--max-seconds expects seconds above 0"),
                  "'%s': %s", bad[i], out);
    }
    test_remove_tree(f.dir);
}

/* inspect shows the cost of a run before any run: y = x * w + 1 takes 2
 * FLOPs per row of x; x, w, x * w and y are alive at once at the end. */
TEST(test_model_cli_inspect_estimates_the_cost) {
    fixture f;
    if (!setup(&f)) return;
    char args[2048], out[8192];
    snprintf(args, sizeof args, "inspect '%s'", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 &&
                  strstr(out, "estimate per run: 4 FLOP, peak memory 32 B (weights 8 B)"),
              "%s", out);
    snprintf(args, sizeof args, "inspect '%s' --size n=1000", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 0 &&
                  strstr(out, "4.00 kFLOP, peak memory 23.45 KiB (weights 8 B)"),
              "%s", out);
    snprintf(args, sizeof args, "inspect '%s' --size m=2", f.model);
    CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "they have: n"), "%s", out);
    snprintf(args, sizeof args, "inspect '%s' --size n=2", f.input);
    CHECK_MSG(run_porta(args, out, sizeof out) == 2 && strstr(out, "holds none"), "%s", out);
    test_remove_tree(f.dir);
}
