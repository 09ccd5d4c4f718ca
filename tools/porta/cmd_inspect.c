/* porta inspect FILE: what a .porta, .pt2 or .safetensors file holds:
 * its tensors, and for a model its inputs, outputs, parameter count and
 * how often each op occurs in the graph. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "porta_io.h"

static void print_shape(int rank, const int64_t *sizes, const char *const *symbols) {
    printf("[");
    for (int d = 0; d < rank; d++) {
        if (symbols && symbols[d][0]) printf("%s%s", d ? ", " : "", symbols[d]);
        else printf("%s%lld", d ? ", " : "", (long long)sizes[d]);
    }
    printf("]");
}

static int print_tensors(porta_safetensors *file) {
    int count = porta_safetensors_count(file);
    int64_t elements = 0;
    uint64_t bytes = 0;
    printf("tensors: %d\n", count);
    for (int i = 0; i < count; i++) {
        const char *name = porta_safetensors_name(file, i);
        porta_safetensors_info info;
        porta_status *status = porta_safetensors_info_get(file, name, &info);
        if (status) return cli_fail("inspect", status);
        int64_t numel = 1;
        for (int d = 0; d < info.rank; d++) numel *= info.sizes[d];
        elements += numel;
        bytes += info.bytes;
        printf("  %-40s %-8s ", name, porta_dtype_name(info.dtype));
        print_shape(info.rank, info.sizes, NULL);
        printf("\n");
    }
    printf("elements: %lld (%.2f MiB)\n", (long long)elements, (double)bytes / (1 << 20));
    return 0;
}

static int print_model(porta_model *model) {
    printf("format: %s\n", porta_model_format(model));
    int n_in = porta_model_input_count(model);
    printf("inputs: %d\n", n_in);
    for (int i = 0; i < n_in; i++) {
        porta_model_input_info info;
        porta_status *status = porta_model_input_info_get(model, i, &info);
        if (status) return cli_fail("inspect", status);
        printf("  %-40s %-8s ", info.name, porta_dtype_name(info.dtype));
        print_shape(info.rank, info.sizes, info.symbols);
        printf("\n");
    }
    int n_out = porta_model_output_count(model);
    printf("outputs: %d\n", n_out);
    for (int i = 0; i < n_out; i++) printf("  %s\n", porta_model_output_name(model, i));
    printf("weights: %d, parameters: %lld\n", porta_model_weight_count(model),
           (long long)porta_model_parameter_count(model));
    int kinds = porta_model_op_kind_count(model);
    printf("nodes: %d, distinct ops: %d\n", porta_model_node_count(model), kinds);
    for (int k = 0; k < kinds; k++) {
        const char *name;
        int count;
        porta_model_op_count_at(model, k, &name, &count);
        printf("  %6d  %s\n", count, name);
    }
    return 0;
}

/* Only a regular file is read: anything else (a FIFO would block) is left
 * for the safetensors reader to refuse. */
static bool is_zip(const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    struct stat st;
    unsigned char magic[4] = {0};
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ssize_t got = regular ? pread(fd, magic, sizeof magic, 0) : 0;
    close(fd);
    return got == 4 && !memcmp(magic, "PK\3\4", 4);
}

int cmd_inspect(int argc, char **argv) {
    if (argc < 2) return cli_usage("inspect", "missing FILE");
    if (argc > 2) return cli_usage("inspect", "unexpected argument '%s'", argv[2]);
    const char *path = argv[1];
    porta_model *model = NULL;
    porta_status *status;
    if (is_zip(path)) { /* a .pt2: the model reader lists what it holds */
        status = porta_model_load(path, &model);
        if (status) return cli_fail("inspect", status);
        int count = porta_model_weight_count(model);
        printf("file: %s\ntensors: %d\n", path, count);
        for (int i = 0; i < count; i++) {
            porta_model_input_info info;
            if ((status = porta_model_weight_info_get(model, i, &info))) {
                porta_model_free(model);
                return cli_fail("inspect", status);
            }
            printf("  %-40s %-8s ", info.name, porta_dtype_name(info.dtype));
            print_shape(info.rank, info.sizes, NULL);
            printf("\n");
        }
        int code = print_model(model);
        porta_model_free(model);
        return code;
    }
    porta_safetensors *file = NULL;
    status = porta_safetensors_open(path, &file);
    if (status) return cli_fail("inspect", status);
    printf("file: %s\n", path);
    int code = print_tensors(file);
    bool has_graph = porta_safetensors_metadata_get(file, "porta.graph") != NULL;
    porta_safetensors_close(file);
    if (code || !has_graph) return code;
    status = porta_model_load(path, &model);
    if (status) return cli_fail("inspect", status);
    code = print_model(model);
    porta_model_free(model);
    return code;
}
