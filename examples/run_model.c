/* Runs a model saved from PyTorch (torch_porta.export's .porta file or a
 * .pt2 archive) on inputs from a safetensors file, through the public C
 * API only:
 *
 *     run_model model.porta inputs.safetensors [DEVICE]
 *
 * Each model input is the file's tensor of the same name. Prints each
 * output's shape and first values. */
#include <stdio.h>
#include <stdlib.h>

#include "porta.h"
#include "porta_io.h"
#include "porta_model.h"

static int fail(porta_status *status) {
    fprintf(stderr, "run_model: %s\n", porta_status_message(status));
    porta_status_free(status);
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: run_model MODEL INPUTS.safetensors [DEVICE]\n");
        return 2;
    }
    porta_device *device;
    porta_status *status = porta_device_get(argc > 3 ? atoi(argv[3]) : 0, &device);
    if (status) return fail(status);

    porta_model *model = NULL;
    if ((status = porta_model_load(argv[1], &model))) return fail(status);
    porta_safetensors *file = NULL;
    if ((status = porta_safetensors_open(argv[2], &file))) {
        porta_model_free(model);
        return fail(status);
    }

    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    porta_tensor **inputs = calloc((size_t)n_in + 1, sizeof *inputs);
    porta_tensor **outputs = calloc((size_t)n_out + 1, sizeof *outputs);
    for (int i = 0; !status && i < n_in; i++) {
        porta_model_input_info info;
        status = porta_model_input_info_get(model, i, &info);
        if (!status) status = porta_safetensors_get(file, info.name, device, &inputs[i]);
    }
    if (!status) status = porta_model_run(model, device, inputs, n_in, outputs, n_out);

    for (int o = 0; !status && o < n_out; o++) {
        porta_tensor *out = outputs[o], *as_double = NULL;
        int rank = porta_tensor_rank(out);
        printf("%s: [", porta_model_output_name(model, o));
        for (int d = 0; d < rank; d++)
            printf("%s%lld", d ? ", " : "", (long long)porta_tensor_sizes(out)[d]);
        printf("]");
        status = porta_cast(out, PORTA_F64, &as_double);
        int64_t n = porta_tensor_numel(out);
        double *values = malloc((size_t)(n ? n : 1) * sizeof *values);
        if (!status && values)
            status = porta_tensor_to_host(as_double, values, (size_t)n * sizeof *values);
        for (int64_t i = 0; !status && values && i < n && i < 5; i++) printf(" %.6g", values[i]);
        printf("%s\n", n > 5 ? " ..." : "");
        free(values);
        if (as_double) porta_tensor_release(as_double);
    }

    for (int i = 0; i < n_in; i++)
        if (inputs[i]) porta_tensor_release(inputs[i]);
    for (int o = 0; o < n_out; o++)
        if (outputs[o]) porta_tensor_release(outputs[o]);
    free(inputs);
    free(outputs);
    porta_safetensors_close(file);
    porta_model_free(model);
    return status ? fail(status) : 0;
}
