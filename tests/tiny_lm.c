#include "tiny_lm.h"

#include <stdio.h>
#include <stdlib.h>

#include "porta_io.h"
#include "test.h"

static const char *const GRAPH =
    "{\"version\": [1, 0],"
    " \"symbols\": [{\"name\": \"batch\", \"min\": 1, \"max\": 8}],"
    " \"inputs\": [{\"name\": \"ids\", \"dtype\": \"int64\", \"shape\": [\"batch\", 1]},"
    "              {\"name\": \"positions\", \"dtype\": \"int64\", \"shape\": [\"batch\"]},"
    "              {\"name\": \"keys\", \"dtype\": \"float32\", \"shape\": [1, \"batch\", 1, 6, 2]},"
    "              {\"name\": \"values\", \"dtype\": \"float32\", \"shape\": [1, \"batch\", 1, 6, 2]}],"
    " \"weights\": [{\"name\": \"table\", \"dtype\": \"float32\", \"shape\": [5, 5]}],"
    " \"nodes\": ["
    "  {\"op\": \"embedding\", \"args\": [{\"tensor\": \"table\"}, {\"tensor\": \"ids\"},"
    "   {\"int\": -1}, {\"bool\": false}, {\"bool\": false}], \"outputs\": [\"logits\"]},"
    "  {\"op\": \"add.Scalar\", \"args\": [{\"tensor\": \"keys\"}, {\"int\": 0}, {\"int\": 1}],"
    "   \"outputs\": [\"k\"]},"
    "  {\"op\": \"add.Scalar\", \"args\": [{\"tensor\": \"values\"}, {\"int\": 0}, {\"int\": 1}],"
    "   \"outputs\": [\"v\"]}"
    " ],"
    " \"outputs\": [\"logits\", \"k\", \"v\"]}";

bool tiny_lm_save(char *dir, size_t dir_cap, char *path, size_t path_cap) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, dir_cap, "%s/porta_tiny_lm_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(dir)) {
        test_fail(__FILE__, __LINE__, "mkdtemp %s failed", dir);
        return false;
    }
    snprintf(path, path_cap, "%s/tiny.porta", dir);
    float table[25] = {0};
    for (int i = 0; i < 5; i++) table[i * 5 + (i + 1) % 5] = 1;
    porta_tensor *w = NULL;
    porta_status *status =
        porta_tensor_from_host(test_cpu(), PORTA_F32, 2, (int64_t[]){5, 5}, table, &w);
    porta_safetensors_pair metadata[2] = {{"porta.format", "1.0"}, {"porta.graph", GRAPH}};
    porta_safetensors_entry weights[1] = {{"table", w}};
    if (!status) status = porta_safetensors_save(path, weights, 1, metadata, 2);
    if (w) porta_tensor_release(w);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    return true;
}
