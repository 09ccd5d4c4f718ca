/* porta run / bench / inspect on a hand-written .porta model: outputs,
 * exit statuses (0 done, 1 refused or failed, 2 bad usage) and messages. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "porta_io.h"
#include "test.h"

static int run_porta(const char *args, char *output, size_t cap) {
    char command[2048];
    snprintf(command, sizeof command, "'%s' %s 2>&1", PORTA_CLI_PATH, args);
    FILE *pipe = popen(command, "r");
    if (!pipe) return -1;
    size_t used = fread(output, 1, cap - 1, pipe);
    output[used] = '\0';
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
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
