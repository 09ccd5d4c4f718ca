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

/* "1.5 GFLOP", "12.0 MiB": a count in the unit that keeps it short. */
static const char *scaled(double value, const char *const *units, double step, char *text,
                          size_t cap) {
    int u = 0;
    while (value >= step && units[u + 1]) {
        value /= step;
        u++;
    }
    snprintf(text, cap, u ? "%.2f %s" : "%.0f %s", value, units[u]);
    return text;
}

static int print_estimate(porta_model *model, const cli_size *sizes, int size_count) {
    const char *names[16];
    int64_t values[16];
    char copies[16][64];
    for (int i = 0; i < size_count; i++) {
        snprintf(copies[i], sizeof copies[i], "%.*s", (int)sizes[i].symbol_length,
                 sizes[i].symbol);
        names[i] = copies[i];
        values[i] = sizes[i].value;
    }
    porta_model_cost e;
    porta_status *status = porta_model_estimate(model, names, values, size_count, &e);
    if (status) return cli_fail("inspect", status);
    static const char *const flops[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", NULL};
    static const char *const bytes[] = {"B", "KiB", "MiB", "GiB", "TiB", NULL};
    char a[32], b[32], c[32];
    printf("estimate per run%s: %s, peak memory %s (weights %s)\n",
           size_count ? " at the --size given" : "", scaled(e.flops, flops, 1000, a, sizeof a),
           scaled((double)e.peak_bytes, bytes, 1024, b, sizeof b),
           scaled((double)e.weight_bytes, bytes, 1024, c, sizeof c));
    int nodes = porta_model_node_count(model);
    if (e.nodes_sized < nodes)
        printf("  not counted: %d of %d nodes (from op %s on, whose shapes the estimate does "
               "not know)\n",
               nodes - e.nodes_sized, nodes, e.unsized_op);
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

/* What inspect shows of a model; frees it. */
static int describe_model(porta_model *model, const cli_size *sizes, int size_count) {
    int code = cli_check_sizes("inspect", model, sizes, size_count);
    if (!code) code = print_model(model);
    if (!code) code = print_estimate(model, sizes, size_count);
    porta_model_free(model);
    return code;
}

/* Only a regular file is read: anything else (a FIFO would block) is left
 * for the safetensors reader to refuse. */
static bool is_zip(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return false;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) return false;
    unsigned char magic[4] = {0};
    bool regular = fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
    ssize_t got = regular ? pread(fd, magic, sizeof magic, 0) : 0;
    close(fd);
    return got == 4 && !memcmp(magic, "PK\3\4", 4);
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    cli_size sizes[16];
    int size_count = 0;
    for (int a = 1; a < argc; a++) {
        if (!strcmp(argv[a], "--size")) {
            if (a + 1 >= argc) return cli_usage("inspect", "--size needs a value");
            if (size_count == 16) return cli_usage("inspect", "at most 16 --size options");
            int code = cli_parse_size("inspect", argv[++a], &sizes[size_count++]);
            if (code) return code;
        } else if (argv[a][0] == '-' || path) {
            return cli_usage("inspect", "unexpected argument '%s'", argv[a]);
        } else {
            path = argv[a];
        }
    }
    if (!path) return cli_usage("inspect", "missing FILE");
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
        return describe_model(model, sizes, size_count);
    }
    porta_safetensors *file = NULL;
    status = porta_safetensors_open(path, &file);
    if (status) return cli_fail("inspect", status);
    printf("file: %s\n", path);
    int code = print_tensors(file);
    bool has_graph = porta_safetensors_metadata_get(file, "porta.graph") != NULL;
    porta_safetensors_close(file);
    if (code) return code;
    if (!has_graph)
        return size_count ? cli_usage("inspect", "--size applies to a model; %s holds none", path)
                          : 0;
    status = porta_model_load(path, &model);
    if (status) return cli_fail("inspect", status);
    return describe_model(model, sizes, size_count);
}
