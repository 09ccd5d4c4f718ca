/* Models: small hand-written .porta files loaded and run (weights, symbolic
 * sizes, ops with several results, factories on the run's device), and
 * hostile graphs and files, each rejected with a message naming what was
 * wrong, before anything runs and without leaks. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/program.h"
#include "porta_io.h"
#include "porta_model.h"
#include "test.h"

/* ---- helpers ---- */

static char *begin_dir(void) {
    const char *base = getenv("TMPDIR");
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/porta_model_XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(pattern);
    return dir ? strdup(dir) : NULL;
}

static void end_dir(char *dir) {
    if (!dir) return;
    test_remove_tree(dir);
    free(dir);
}

/* A .porta file at dir/name: the graph JSON and the weights given. */
static porta_status *write_model(const char *path, const char *version, const char *graph,
                                 const porta_safetensors_entry *weights, int weight_count) {
    porta_safetensors_pair metadata[2] = {{"porta.format", version}, {"porta.graph", graph}};
    return porta_safetensors_save(path, weights, weight_count, metadata, graph ? 2 : 1);
}

static porta_tensor *tensor_of(int rank, const int64_t *sizes, const float *data) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(test_cpu(), PORTA_F32, rank, sizes, data, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

/* relu(x @ w + b) with x [batch, 3] (batch symbolic), w [3, 2], b [2],
 * then reshaped to [batch * 2] through sizes computed by builtins. */
static const char *const MLP_GRAPH =
    "{\"version\": [1, 0],"
    " \"symbols\": [{\"name\": \"batch\", \"min\": 1, \"max\": 8}],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"batch\", 3]}],"
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [3, 2]},"
    "               {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [2]}],"
    " \"nodes\": ["
    "  {\"op\": \"mm\", \"args\": [{\"tensor\": \"x\"}, {\"tensor\": \"w\"}], \"outputs\": [\"xw\"]},"
    "  {\"op\": \"add.Tensor\", \"args\": [{\"tensor\": \"xw\"}, {\"tensor\": \"b\"}, {\"int\": 1}],"
    "   \"outputs\": [\"y\"]},"
    "  {\"op\": \"relu\", \"args\": [{\"tensor\": \"y\"}], \"outputs\": [\"r\"]},"
    "  {\"op\": \"sym_size.int\", \"args\": [{\"tensor\": \"x\"}, {\"int\": 0}], \"outputs\": [\"n\"]},"
    "  {\"op\": \"sym.mul\", \"args\": [{\"sym\": \"n\"}, {\"int\": 2}], \"outputs\": [\"n2\"]},"
    "  {\"op\": \"view\", \"args\": [{\"tensor\": \"r\"}, {\"ints\": [\"n2\"]}], \"outputs\": [\"flat\"]},"
    "  {\"op\": \"split_with_sizes\", \"args\": [{\"tensor\": \"r\"}, {\"ints\": [1, 1]}, {\"int\": 1}],"
    "   \"outputs\": [\"first\", null]}"
    " ],"
    " \"outputs\": [\"flat\", \"first\"]}";

static const float MLP_W[6] = {1, -1, 0.5f, 2, -2, 0.25f};
static const float MLP_B[2] = {0.5f, -0.5f};

/* A directory with mlp.porta written; NULL (failure recorded) otherwise. */
static char *write_mlp(char *path, size_t cap) {
    char *dir = begin_dir();
    if (!dir) {
        test_fail(__FILE__, __LINE__, "no temporary directory");
        return NULL;
    }
    snprintf(path, cap, "%s/mlp.porta", dir);
    porta_tensor *w = tensor_of(2, (int64_t[]){3, 2}, MLP_W);
    porta_tensor *b = tensor_of(1, (int64_t[]){2}, MLP_B);
    porta_safetensors_entry weights[2] = {{"w", w}, {"b", b}};
    porta_status *status = w && b ? write_model(path, "1.0", MLP_GRAPH, weights, 2) : NULL;
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    }
    if (w) porta_tensor_release(w);
    if (b) porta_tensor_release(b);
    return dir;
}

static void check_mlp_outputs(int batch, const float *x, porta_tensor *const *outputs) {
    double want[16], first[8];
    for (int i = 0; i < batch; i++)
        for (int j = 0; j < 2; j++) {
            double sum = MLP_B[j];
            for (int k = 0; k < 3; k++) sum += (double)x[i * 3 + k] * MLP_W[k * 2 + j];
            want[i * 2 + j] = sum > 0 ? sum : 0;
            if (j == 0) first[i] = want[i * 2];
        }
    CHECK(porta_tensor_rank(outputs[0]) == 1 && porta_tensor_sizes(outputs[0])[0] == 2 * batch);
    CHECK(porta_tensor_rank(outputs[1]) == 2 && porta_tensor_sizes(outputs[1])[0] == batch &&
          porta_tensor_sizes(outputs[1])[1] == 1);
    double *got = test_to_doubles(outputs[0]);
    double *got_first = test_to_doubles(outputs[1]);
    if (got) test_close("flat", got, want, 2 * batch, 1e-6, 1e-6);
    if (got_first) test_close("first", got_first, first, batch, 1e-6, 1e-6);
    free(got);
    free(got_first);
}

/* ---- loading and running ---- */

TEST(test_model_runs_a_hand_written_graph_on_every_device) {
    char path[600];
    char *dir = write_mlp(path, sizeof path);
    if (!dir) return;
    porta_model *model = NULL;
    porta_status *status = porta_model_load(path, &model);
    if (status) {
        test_fail(__FILE__, __LINE__, "load: %s", porta_status_message(status));
        porta_status_free(status);
        end_dir(dir);
        return;
    }
    CHECK(porta_model_input_count(model) == 1 && porta_model_output_count(model) == 2);
    CHECK(porta_model_weight_count(model) == 2 && porta_model_parameter_count(model) == 8);
    CHECK(porta_model_node_count(model) == 7 && porta_model_op_kind_count(model) == 7);
    CHECK(!strcmp(porta_model_output_name(model, 1), "first"));
    CHECK(!strcmp(porta_model_format(model), "porta 1.0"));
    porta_model_input_info info;
    CHECK_OK(porta_model_input_info_get(model, 0, &info));
    CHECK(info.rank == 2 && info.sizes[0] == -1 && !strcmp(info.symbols[0], "batch") &&
          info.sizes[1] == 3 && !strcmp(info.symbols[1], ""));
    CHECK_OK(porta_model_weight_info_get(model, 1, &info));
    CHECK(!strcmp(info.name, "b") && info.dtype == PORTA_F32 && info.rank == 1 &&
          info.sizes[0] == 2);
    CHECK_ERR(porta_model_weight_info_get(model, 2, &info), PORTA_ERR_OUT_OF_RANGE,
              "model weight 2: the model has 2 weights");
    /* Two batch sizes on each device: weights load once per device. */
    for (int d = 0; d < porta_device_count(); d++) {
        porta_device *device;
        CHECK_OK(porta_device_get(d, &device));
        for (int batch = 1; batch <= 4; batch += 3) {
            float x[12];
            for (int i = 0; i < 3 * batch; i++) x[i] = (float)(i % 5) - 1.5f;
            porta_tensor *input = tensor_of(2, (int64_t[]){batch, 3}, x);
            porta_tensor *outputs[2] = {NULL, NULL};
            status = input ? porta_model_run(model, device, &input, 1, outputs, 2) : NULL;
            if (status) {
                test_fail(__FILE__, __LINE__, "porta:%d: %s", d, porta_status_message(status));
                porta_status_free(status);
            } else if (input) {
                CHECK(porta_tensor_device(outputs[0]) == device);
                check_mlp_outputs(batch, x, outputs);
                porta_tensor_release(outputs[0]);
                porta_tensor_release(outputs[1]);
            }
            if (input) porta_tensor_release(input);
        }
    }
    porta_model_free(model);
    end_dir(dir);
}

TEST(test_model_run_checks_its_inputs) {
    char path[600];
    char *dir = write_mlp(path, sizeof path);
    if (!dir) return;
    porta_model *model = NULL;
    CHECK_OK(porta_model_load(path, &model));
    porta_tensor *outputs[2] = {NULL, NULL};
    float x[30] = {0};
    porta_tensor *wide = tensor_of(2, (int64_t[]){2, 4}, x);
    porta_tensor *big = tensor_of(2, (int64_t[]){9, 3}, x);
    porta_tensor *vector = tensor_of(1, (int64_t[]){3}, x);
    porta_tensor *ints = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_I64, 2, (int64_t[]){2, 3}, 0, &ints));
    CHECK_ERR(porta_model_run(model, test_cpu(), &wide, 1, outputs, 2), PORTA_ERR_SHAPE,
              "model input 0 (x): expected size 3 in dim 1, got shape [2, 4]");
    CHECK_ERR(porta_model_run(model, test_cpu(), &big, 1, outputs, 2), PORTA_ERR_SHAPE,
              "dim 0 (symbol batch) must be in [1, 8], got shape [9, 3]");
    CHECK_ERR(porta_model_run(model, test_cpu(), &vector, 1, outputs, 2), PORTA_ERR_SHAPE,
              "expected 2 dims, got shape [3]");
    CHECK_ERR(porta_model_run(model, test_cpu(), &ints, 1, outputs, 2), PORTA_ERR_DTYPE,
              "model input 0 (x): expected float32, got int64");
    CHECK_ERR(porta_model_run(model, test_cpu(), &wide, 1, outputs, 1),
              PORTA_ERR_INVALID_ARGUMENT, "takes 1 inputs and gives 2 outputs");
    CHECK(outputs[0] == NULL && outputs[1] == NULL);
    porta_tensor_release(wide);
    porta_tensor_release(big);
    porta_tensor_release(vector);
    porta_tensor_release(ints);
    porta_model_free(model);
    end_dir(dir);
}

/* 'D' arguments take the run's device; the graph may have no inputs. */
TEST(test_model_factories_make_tensors_on_the_run_device) {
    static const char *const graph =
        "{\"version\": [1, 3], \"inputs\": [], \"weights\": [], \"future\": 1,"
        " \"nodes\": [{\"op\": \"full\", \"args\": [{\"ints\": [2, 2]}, {\"float\": 1.5}, "
        "  {\"dtype\": \"float32\"}, null, null, null], \"outputs\": [\"f\"]},"
        "  {\"op\": \"mul.Tensor\", \"args\": [{\"tensor\": \"f\"}, {\"float\": \"-inf\"}],"
        "   \"outputs\": [\"g\"]}],"
        " \"outputs\": [\"g\", \"f\"]}";
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/full.porta", dir);
    CHECK_OK(write_model(path, "1.7", graph, NULL, 0));
    porta_model *model = NULL;
    CHECK_OK(porta_model_load(path, &model));
    for (int d = 0; model && d < porta_device_count(); d++) {
        porta_device *device;
        CHECK_OK(porta_device_get(d, &device));
        porta_tensor *outputs[2] = {NULL, NULL};
        porta_status *status = porta_model_run(model, device, NULL, 0, outputs, 2);
        if (status) {
            test_fail(__FILE__, __LINE__, "porta:%d: %s", d, porta_status_message(status));
            porta_status_free(status);
            continue;
        }
        CHECK(porta_tensor_device(outputs[0]) == device);
        double *g = test_to_doubles(outputs[0]), *f = test_to_doubles(outputs[1]);
        CHECK(g && f && g[3] == -INFINITY && f[0] == 1.5);
        free(g);
        free(f);
        porta_tensor_release(outputs[0]);
        porta_tensor_release(outputs[1]);
    }
    porta_model_free(model);
    end_dir(dir);
}

/* ---- hostile graphs: rejected by the parser, naming the problem ---- */

typedef struct bad_graph {
    const char *json;
    porta_code code;
    const char *message;
} bad_graph;

#define GRAPH_HEAD "{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", " \
                   "\"shape\": [2, 3]}], \"weights\": [], "

static const bad_graph bad_graphs[] = {
    {"[1, 2]", PORTA_ERR_INVALID_ARGUMENT, "the graph: expected an object, got an array"},
    {"{\"version\": [1, 0]", PORTA_ERR_INVALID_ARGUMENT, "JSON at byte 18"},
    {"{\"version\": [2, 0], \"inputs\": [], \"weights\": [], \"nodes\": [], \"outputs\": []}",
     PORTA_ERR_UNSUPPORTED, "format version 2.0 is not supported; this build reads version 1.x"},
    {"{\"version\": \"1.0\"}", PORTA_ERR_INVALID_ARGUMENT, "expected \"version\" to be an array"},
    {"{\"version\": [1, 0], \"weights\": [], \"nodes\": [], \"outputs\": []}",
     PORTA_ERR_INVALID_ARGUMENT, "expected \"inputs\" to be an array, got nothing"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"frobnicate\", \"args\": [], \"outputs\": []}], "
                "\"outputs\": [\"x\"]}",
     PORTA_ERR_UNSUPPORTED, "node 0 calls op \"frobnicate\", which Porta's aten layer does not"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [], \"outputs\": [\"r\"]}], "
                "\"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "node 0 (relu): expected 1 arguments"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"ints\": [1]}], \"outputs\": [\"r\"]}],"
                " \"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "argument 0 is a int list, which the op does not take there"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"tensor\": \"y\"}], "
                "\"outputs\": [\"r\"]}], \"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "value \"y\" is not defined before this use"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"tensor\": \"x\"}], "
                "\"outputs\": [\"x\"]}], \"outputs\": [\"x\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "value \"x\" is defined twice"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"sym\": \"x\"}], "
                "\"outputs\": [\"r\"]}], \"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "expected \"x\" to be an integer, it is a tensor"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"blob\": 1}], "
                "\"outputs\": [\"r\"]}], \"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "expected an argument kind among"},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"relu\", \"args\": [{\"float\": \"lots\"}], "
                "\"outputs\": [\"r\"]}], \"outputs\": [\"r\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "expected a number, \"inf\", \"-inf\" or \"nan\""},
    {GRAPH_HEAD "\"nodes\": [{\"op\": \"sym.add\", \"args\": [{\"tensor\": \"x\"}, {\"int\": 1}], "
                "\"outputs\": [\"s\"]}], \"outputs\": [\"x\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "node 0 (sym.add): argument 0 is a tensor, expected an integer"},
    {GRAPH_HEAD "\"nodes\": [], \"outputs\": []}", PORTA_ERR_INVALID_ARGUMENT,
     "expected at least one output"},
    {GRAPH_HEAD "\"nodes\": [], \"outputs\": [\"nothing\"]}", PORTA_ERR_INVALID_ARGUMENT,
     "graph output: value \"nothing\" is not defined"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"complex32\", "
     "\"shape\": [2]}], \"weights\": [], \"nodes\": [], \"outputs\": [\"x\"]}",
     PORTA_ERR_DTYPE, "expected a dtype among bool"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", "
     "\"shape\": [2, -1]}], \"weights\": [], \"nodes\": [], \"outputs\": [\"x\"]}",
     PORTA_ERR_SHAPE, "dim 1 is -1, expected 0..281474976710656"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", "
     "\"shape\": [99999999999999999999]}], \"weights\": [], \"nodes\": [], \"outputs\": [\"x\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "expected an integer within int64"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", "
     "\"shape\": [1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]}], \"weights\": [], \"nodes\": [], "
     "\"outputs\": [\"x\"]}",
     PORTA_ERR_SHAPE, "expected at most 16 dims, got 17"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", "
     "\"shape\": [\"n\"]}], \"weights\": [], \"nodes\": [], \"outputs\": [\"x\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "names symbol \"n\", which \"symbols\" does not declare"},
    {"{\"version\": [1, 0], \"symbols\": [{\"name\": \"n\", \"min\": 5, \"max\": 2}], "
     "\"inputs\": [], \"weights\": [], \"nodes\": [], \"outputs\": []}",
     PORTA_ERR_INVALID_ARGUMENT, "symbol n: expected 0 <= min <= max"},
    {"{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\\u0000y\", \"dtype\": \"float32\", "
     "\"shape\": []}], \"weights\": [], \"nodes\": [], \"outputs\": [\"x\"]}",
     PORTA_ERR_INVALID_ARGUMENT, "expected a non-empty name (a string without NUL)"},
};

TEST(test_model_graph_parse_rejects_hostile_graphs) {
    for (size_t i = 0; i < sizeof bad_graphs / sizeof bad_graphs[0]; i++) {
        model_program *graph = NULL;
        porta_status *status =
            model_program_parse(bad_graphs[i].json, strlen(bad_graphs[i].json), &graph);
        CHECK_MSG(status != NULL, "graph %zu was accepted", i);
        if (!status) {
            model_program_free(graph);
            continue;
        }
        const char *message = porta_status_message(status);
        CHECK_MSG(porta_status_code(status) == bad_graphs[i].code &&
                      strstr(message, bad_graphs[i].message),
                  "graph %zu: got %s: %s; expected %s: ...%s...", i,
                  porta_code_name(porta_status_code(status)), message,
                  porta_code_name(bad_graphs[i].code), bad_graphs[i].message);
        porta_status_free(status);
    }
}

/* Every prefix of a valid graph is rejected (truncated files), never
 * crashes, and leaks nothing. */
TEST(test_model_graph_parse_rejects_every_truncation) {
    size_t length = strlen(MLP_GRAPH);
    model_program *graph = NULL;
    CHECK_OK(model_program_parse(MLP_GRAPH, length, &graph));
    CHECK(graph->node_count == 7 && graph->slot_count == 10);
    model_program_free(graph);
    for (size_t n = 0; n < length; n++) {
        graph = NULL;
        porta_status *status = model_program_parse(MLP_GRAPH, n, &graph);
        CHECK_MSG(status != NULL, "a prefix of %zu bytes was accepted", n);
        if (status) porta_status_free(status);
        else model_program_free(graph);
    }
}

/* ---- hostile files ---- */

TEST(test_model_load_rejects_bad_files) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    float data[6] = {0};
    porta_tensor *w = tensor_of(2, (int64_t[]){3, 2}, data);
    porta_tensor *w_wrong = tensor_of(2, (int64_t[]){2, 3}, data);
    porta_safetensors_entry right[2] = {{"w", w}, {"b", w}};
    porta_safetensors_entry wrong[2] = {{"w", w_wrong}, {"b", w}};
    static const char *const weighted =
        "{\"version\": [1, 0], \"inputs\": [], \"weights\": "
        "[{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [3, 2]},"
        " {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [3, 2]}], "
        "\"nodes\": [], \"outputs\": [\"w\"]}";
    const struct {
        const char *version, *graph;
        const porta_safetensors_entry *weights;
        int count;
        porta_code code;
        const char *message;
    } cases[] = {
        {"2.1", weighted, right, 2, PORTA_ERR_UNSUPPORTED,
         ".porta format version \"2.1\" is not supported; this build reads version 1.x"},
        {"one", weighted, right, 2, PORTA_ERR_INVALID_ARGUMENT,
         "expected \"porta.format\" to be a version MAJOR.MINOR, got \"one\""},
        {"1.0", NULL, right, 2, PORTA_ERR_INVALID_ARGUMENT,
         "a safetensors file without a model (no \"porta.graph\" metadata)"},
        {"1.0", weighted, right, 1, PORTA_ERR_INVALID_ARGUMENT,
         "the graph declares weight b, which the file does not hold"},
        {"1.0", weighted, wrong, 2, PORTA_ERR_SHAPE,
         "weight w: the graph declares float32 [3, 2], the file holds float32 [2, 3]"},
        {"1.0", "{\"version\": [1, 0], \"inputs\": [], \"weights\": [], \"nodes\": [], "
                "\"outputs\": [\"w\"]}",
         right, 2, PORTA_ERR_INVALID_ARGUMENT, "value \"w\" is not defined before this use"},
    };
    for (size_t i = 0; w && w_wrong && i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(path, sizeof path, "%s/bad%zu.porta", dir, i);
        CHECK_OK(write_model(path, cases[i].version, cases[i].graph, cases[i].weights,
                             cases[i].count));
        porta_model *model = NULL;
        porta_status *status = porta_model_load(path, &model);
        CHECK_MSG(status && porta_status_code(status) == cases[i].code &&
                      strstr(porta_status_message(status), cases[i].message) &&
                      strstr(porta_status_message(status), path),
                  "case %zu: %s", i, status ? porta_status_message(status) : "accepted");
        if (status) porta_status_free(status);
        else porta_model_free(model);
    }
    /* Not a model file at all, and a file that is not there. */
    snprintf(path, sizeof path, "%s/text.porta", dir);
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("hello", f);
        fclose(f);
    }
    porta_model *model = NULL;
    porta_status *status = porta_model_load(path, &model);
    CHECK(status != NULL);
    if (status) porta_status_free(status);
    snprintf(path, sizeof path, "%s/missing.porta", dir);
    CHECK_ERR(porta_model_load(path, &model), PORTA_ERR_IO, "cannot open");
    if (w) porta_tensor_release(w);
    if (w_wrong) porta_tensor_release(w_wrong);
    end_dir(dir);
}

/* An op failing at run time names the node; nothing leaks. */
TEST(test_model_run_error_names_the_node) {
    static const char *const graph =
        "{\"version\": [1, 0], \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", "
        "\"shape\": [2, 3]}], \"weights\": [], \"nodes\": ["
        " {\"op\": \"relu\", \"args\": [{\"tensor\": \"x\"}], \"outputs\": [\"r\"]},"
        " {\"op\": \"mm\", \"args\": [{\"tensor\": \"r\"}, {\"tensor\": \"x\"}], "
        "  \"outputs\": [\"m\"]}], \"outputs\": [\"m\", \"r\"]}";
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/mm.porta", dir);
    CHECK_OK(write_model(path, "1.0", graph, NULL, 0));
    porta_model *model = NULL;
    CHECK_OK(porta_model_load(path, &model));
    float data[6] = {0};
    porta_tensor *x = tensor_of(2, (int64_t[]){2, 3}, data);
    porta_tensor *outputs[2] = {NULL, NULL};
    if (model && x)
        CHECK_ERR(porta_model_run(model, test_cpu(), &x, 1, outputs, 2), PORTA_ERR_SHAPE,
                  "node 1 (mm): ");
    CHECK(outputs[0] == NULL && outputs[1] == NULL);
    if (x) porta_tensor_release(x);
    porta_model_free(model);
    end_dir(dir);
}
