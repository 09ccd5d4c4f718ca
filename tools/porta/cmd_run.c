/* porta run MODEL --input X.safetensors --output Y.safetensors [--device D]:
 * one run of a model on one device, tensors in and out as safetensors. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "porta_io.h"

static int write_outputs(porta_model *model, porta_tensor **outputs, const char *path) {
    int n = porta_model_output_count(model);
    porta_safetensors_entry *entries = calloc((size_t)n, sizeof *entries);
    if (!entries) {
        fprintf(stderr, "porta run: out of memory\n");
        return 1;
    }
    /* Outputs are named as in the graph; a model returning one value twice
     * gets positional names ("0", "1", ...) instead, as names must be unique. */
    bool unique = true;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < i; k++)
            if (!strcmp(porta_model_output_name(model, i), porta_model_output_name(model, k)))
                unique = false;
    char (*positions)[16] = calloc((size_t)n + 1, sizeof *positions);
    for (int i = 0; positions && i < n; i++) {
        snprintf(positions[i], sizeof positions[i], "%d", i);
        entries[i] = (porta_safetensors_entry){
            unique ? porta_model_output_name(model, i) : positions[i], outputs[i]};
    }
    porta_status *status = positions ? porta_safetensors_save(path, entries, n, NULL, 0) : NULL;
    free(entries);
    if (!positions) {
        fprintf(stderr, "porta run: out of memory\n");
        return 1;
    }
    free(positions);
    return status ? cli_fail("run", status) : 0;
}

int cmd_run(int argc, char **argv) {
    const char *model_path = NULL, *input = NULL, *output = NULL, *device_name = "porta:0",
               *max_seconds = NULL;
    for (int a = 1; a < argc; a++) {
        const char **option = !strcmp(argv[a], "--input")         ? &input
                              : !strcmp(argv[a], "--output")      ? &output
                              : !strcmp(argv[a], "--device")      ? &device_name
                              : !strcmp(argv[a], "--max-seconds") ? &max_seconds
                                                                  : NULL;
        if (option) {
            if (a + 1 >= argc) return cli_usage("run", "%s needs a value", argv[a]);
            *option = argv[++a];
        } else if (argv[a][0] == '-' || model_path) {
            return cli_usage("run", "unexpected argument '%s'", argv[a]);
        } else {
            model_path = argv[a];
        }
    }
    if (!model_path) return cli_usage("run", "missing MODEL");
    if (!output) return cli_usage("run", "missing --output FILE");
    double seconds = 0;
    int code = max_seconds ? cli_seconds("run", "--max-seconds", max_seconds, &seconds) : 0;
    if (code) return code;
    porta_device *device;
    if ((code = cli_device("run", device_name, &device))) return code;
    porta_model *model = NULL;
    porta_status *status = porta_model_load(model_path, &model);
    if (!status) status = porta_model_set_time_limit(model, seconds);
    if (status) {
        porta_model_free(model);
        return cli_fail("run", status);
    }
    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    porta_tensor **inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    porta_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    if (!inputs || !outputs) {
        fprintf(stderr, "porta run: out of memory\n");
        code = 1;
    } else if (n_in && !input) {
        code = cli_usage("run", "missing --input FILE: the model takes %d input(s)", n_in);
    } else if (n_in) {
        code = cli_read_inputs("run", model, input, inputs);
    }
    if (!code) {
        status = porta_model_run(model, device, inputs, n_in, outputs, n_out);
        code = status ? cli_fail("run", status) : write_outputs(model, outputs, output);
        if (!status) cli_release(outputs, n_out);
    }
    if (inputs) cli_release(inputs, n_in);
    free(inputs);
    free(outputs);
    porta_model_free(model);
    return code;
}
