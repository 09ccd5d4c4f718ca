/* Helpers shared by the commands: errors, device names, model inputs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/report/select.h"
#include "cli.h"
#include "porta_io.h"

int cli_fail(const char *command, porta_status *status) {
    fprintf(stderr, "porta %s: %s\n", command, porta_status_message(status));
    porta_status_free(status);
    return 1;
}

int cli_usage(const char *command, const char *fmt, ...) {
    va_list args;
    va_start(args, fmt);
    fprintf(stderr, "porta %s: ", command);
    vfprintf(stderr, fmt, args);
    fprintf(stderr, " (try 'porta %s --help')\n", command);
    va_end(args);
    return 2;
}

int cli_device(const char *command, const char *text, porta_device **out) {
    if (!strncmp(text, "porta:auto", 10) && (!text[10] || text[10] == ':')) {
        int index;
        porta_status *status = porta_select_device(text[10] ? text + 11 : "throughput", NULL,
                                                   getenv("PORTA_PRICES"), true, &index);
        if (!status) status = porta_device_get(index, out);
        return status ? (cli_fail(command, status), 2) : 0;
    }
    const char *number = !strncmp(text, "porta:", 6) ? text + 6 : text;
    char *end;
    long index = strtol(number, &end, 10);
    if (end != number && *end == '\0') {
        porta_status *status = porta_device_get((int)index, out);
        return status ? (cli_fail(command, status), 2) : 0;
    }
    int count = porta_device_count();
    for (int i = 0; i < count; i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (!strcmp(info.backend, text)) {
            *out = device;
            return 0;
        }
    }
    return cli_usage(command, "no device '%s': expected porta:N (see 'porta devices') or a "
                              "backend name with a device here", text);
}

void cli_release(porta_tensor **tensors, int count) {
    for (int i = 0; i < count; i++)
        if (tensors[i]) porta_tensor_release(tensors[i]);
}

/* The tensor in `file` that feeds input i: named as the input, else "i",
 * else the only tensor of a one-input model; NULL when there is none. */
static const char *input_tensor_name(const porta_safetensors *file, const char *input, int i,
                                     int input_count, char *position, size_t cap) {
    snprintf(position, cap, "%d", i);
    const char *candidates[2] = {input, position};
    int count = porta_safetensors_count(file);
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < count; k++)
            if (!strcmp(porta_safetensors_name(file, k), candidates[c])) return candidates[c];
    return input_count == 1 && count == 1 ? porta_safetensors_name(file, 0) : NULL;
}

int cli_read_inputs(const char *command, const porta_model *model, const char *path,
                    porta_tensor **inputs) {
    int n = porta_model_input_count(model);
    for (int i = 0; i < n; i++) inputs[i] = NULL;
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_open(path, &file);
    if (status) return cli_fail(command, status);
    porta_device *cpu = NULL;
    status = porta_device_get(0, &cpu);
    for (int i = 0; !status && i < n; i++) {
        porta_model_input_info info;
        status = porta_model_input_info_get(model, i, &info);
        if (status) break;
        char position[16];
        const char *name = input_tensor_name(file, info.name, i, n, position, sizeof position);
        if (!name) {
            fprintf(stderr,
                    "porta %s: %s holds no tensor for input %d: expected one named '%s' or "
                    "'%d'\n",
                    command, path, i, info.name, i);
            porta_safetensors_close(file);
            cli_release(inputs, n);
            return 1;
        }
        status = porta_safetensors_get(file, name, cpu, &inputs[i]);
    }
    porta_safetensors_close(file);
    if (status) {
        cli_release(inputs, n);
        return cli_fail(command, status);
    }
    return 0;
}
