/* porta_model_estimate: FLOPs and peak memory of a run, worked out from
 * the program before running it, checked against counts made by hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "porta_io.h"
#include "porta_model.h"
#include "test.h"

/* conv 3->6 (3x3, padding 1), relu, 2x2 max pool, flatten, linear 96->10,
 * softmax; x [n, 3, 8, 8]. */
static const char CNN[] =
    "{\"version\": [1, 0], \"symbols\": [{\"name\": \"n\", \"min\": 1, \"max\": 64}],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"n\", 3, 8, 8]}],"
    " \"weights\": [{\"name\": \"w\", \"dtype\": \"float32\", \"shape\": [6, 3, 3, 3]},"
    "  {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [6]},"
    "  {\"name\": \"w2\", \"dtype\": \"float32\", \"shape\": [96, 10]},"
    "  {\"name\": \"b2\", \"dtype\": \"float32\", \"shape\": [10]}],"
    " \"nodes\": ["
    "  {\"op\": \"convolution\", \"args\": [{\"tensor\": \"x\"}, {\"tensor\": \"w\"},"
    "   {\"tensor\": \"b\"}, {\"ints\": [1, 1]}, {\"ints\": [1, 1]}, {\"ints\": [1, 1]},"
    "   {\"bool\": false}, {\"ints\": [0, 0]}, {\"int\": 1}], \"outputs\": [\"c\"]},"
    "  {\"op\": \"relu\", \"args\": [{\"tensor\": \"c\"}], \"outputs\": [\"r\"]},"
    "  {\"op\": \"max_pool2d_with_indices\", \"args\": [{\"tensor\": \"r\"}, {\"ints\": [2, 2]},"
    "   {\"ints\": [2, 2]}, {\"ints\": [0, 0]}, {\"ints\": [1, 1]}, {\"bool\": false}],"
    "   \"outputs\": [\"p\", null]},"
    "  {\"op\": \"view\", \"args\": [{\"tensor\": \"p\"}, {\"ints\": [-1, 96]}],"
    "   \"outputs\": [\"v\"]},"
    "  {\"op\": \"addmm\", \"args\": [{\"tensor\": \"b2\"}, {\"tensor\": \"v\"},"
    "   {\"tensor\": \"w2\"}, {\"int\": 1}, {\"int\": 1}], \"outputs\": [\"y\"]},"
    "  {\"op\": \"_softmax\", \"args\": [{\"tensor\": \"y\"}, {\"int\": 1}, {\"bool\": false}],"
    "   \"outputs\": [\"s\"]}],"
    " \"outputs\": [\"s\"]}";

/* flip has no rule: it and the node reading it are not counted. */
static const char UNSIZED[] =
    "{\"version\": [1, 0],"
    " \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [4, 5]}],"
    " \"weights\": [],"
    " \"nodes\": ["
    "  {\"op\": \"neg\", \"args\": [{\"tensor\": \"x\"}], \"outputs\": [\"a\"]},"
    "  {\"op\": \"flip\", \"args\": [{\"tensor\": \"a\"}, {\"ints\": [0]}], \"outputs\": [\"f\"]},"
    "  {\"op\": \"relu\", \"args\": [{\"tensor\": \"f\"}], \"outputs\": [\"r\"]}],"
    " \"outputs\": [\"r\"]}";

static porta_model *load_graph(const char *graph, const char *const *weights,
                               const int64_t (*shapes)[4], const int *ranks, int count) {
    const char *base = getenv("TMPDIR");
    char path[600];
    snprintf(path, sizeof path, "%s/porta_estimate_XXXXXX", base && *base ? base : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0) return NULL;
    close(fd);
    porta_safetensors_entry entries[8];
    porta_status *status = NULL;
    for (int i = 0; i < count && !status; i++) {
        entries[i] = (porta_safetensors_entry){weights[i], NULL};
        status = porta_tensor_full(test_cpu(), PORTA_F32, ranks[i], shapes[i], 0.0,
                                   (porta_tensor **)&entries[i].tensor);
    }
    porta_safetensors_pair meta[2] = {{"porta.format", "1.0"}, {"porta.graph", graph}};
    if (!status) status = porta_safetensors_save(path, entries, count, meta, 2);
    for (int i = 0; i < count; i++)
        if (entries[i].tensor) porta_tensor_release((porta_tensor *)entries[i].tensor);
    porta_model *model = NULL;
    if (!status) status = porta_model_load(path, &model);
    unlink(path);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    }
    return model;
}

TEST(test_model_estimate_counts_flops_and_peak_memory) {
    const char *names[4] = {"w", "b", "w2", "b2"};
    const int64_t shapes[4][4] = {{6, 3, 3, 3}, {6}, {96, 10}, {10}};
    porta_model *model = load_graph(CNN, names, shapes, (int[]){4, 1, 2, 1}, 4);
    if (!model) return;
    porta_model_cost cost;
    CHECK_OK(porta_model_estimate(model, (const char *[]){"n"}, (int64_t[]){2}, 1, &cost));
    /* Per sample: conv 2 * (6*8*8) * (3*3*3) = 20736, relu 384, pool
     * 96 * 4 = 384, addmm 2 * 10 * 96 + 10 = 1930, softmax 5 * 10 = 50. */
    CHECK_MSG(cost.flops == 2 * 23484.0, "flops %.0f", cost.flops);
    /* Weights 4552 B and x 1536 B throughout; the most at once is after
     * relu, with conv's result not yet freed: 2 * 3072 B more. */
    CHECK_MSG(cost.weight_bytes == 4552 && cost.peak_bytes == 4552 + 1536 + 2 * 3072,
              "weights %llu, peak %llu", (unsigned long long)cost.weight_bytes,
              (unsigned long long)cost.peak_bytes);
    CHECK(cost.nodes_sized == 6 && cost.unsized_op == NULL);
    /* Without sizes each symbol takes its smallest size above 0. */
    CHECK_OK(porta_model_estimate(model, NULL, NULL, 0, &cost));
    CHECK_MSG(cost.flops == 23484.0, "flops %.0f", cost.flops);
    CHECK_ERR(porta_model_estimate(model, (const char *[]){"m"}, (int64_t[]){2}, 1, &cost),
              PORTA_ERR_INVALID_ARGUMENT, "no symbol named 'm'");
    CHECK_ERR(porta_model_estimate(model, (const char *[]){"n"}, (int64_t[]){65}, 1, &cost),
              PORTA_ERR_OUT_OF_RANGE, "symbol n must be in [1, 64], got 65");
    CHECK_ERR(porta_model_estimate(NULL, NULL, NULL, 0, &cost), PORTA_ERR_INVALID_ARGUMENT,
              "expected a model");
    porta_model_free(model);
}

TEST(test_model_estimate_names_what_it_cannot_size) {
    porta_model *model = load_graph(UNSIZED, NULL, NULL, NULL, 0);
    if (!model) return;
    porta_model_cost cost;
    CHECK_OK(porta_model_estimate(model, NULL, NULL, 0, &cost));
    CHECK_MSG(cost.flops == 20 && cost.nodes_sized == 1 && cost.unsized_op &&
                  !strcmp(cost.unsized_op, "flip"),
              "flops %.0f, sized %d, op %s", cost.flops, cost.nodes_sized,
              cost.unsized_op ? cost.unsized_op : "none");
    porta_model_free(model);
}
