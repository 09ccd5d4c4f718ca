/* Helpers shared by the commands: errors, device names, model inputs. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "porta_report.h"
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
    errno = 0;
    long index = strtol(number, &end, 10);
    /* A number out of int's range would wrap to another device's index. */
    if (end != number && *end == '\0' && errno != ERANGE && index >= 0 && index <= INT_MAX) {
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

int cli_count(const char *command, const char *option, const char *value, int least, int *out) {
    char *end;
    long n = strtol(value, &end, 10);
    if (end == value || *end || n < least || n > 1000000)
        return cli_usage(command, "%s expects a count of %d..1000000, got '%s'", option, least,
                         value);
    *out = (int)n;
    return 0;
}

int cli_seconds(const char *command, const char *option, const char *value, double *out) {
    char *end;
    errno = 0;
    double seconds = strtod(value, &end);
    /* strtod also takes "inf", "nan" and hex; a duration is plain decimal. */
    bool plain = strspn(value, "0123456789.") == strlen(value);
    if (end == value || *end || errno == ERANGE || !plain || !(seconds > 0))
        return cli_usage(command, "%s expects seconds above 0 (such as 30 or 0.5), got '%s'",
                         option, value);
    *out = seconds;
    return 0;
}

int cli_devices(const char *command, const char *list, porta_device **devices, int *count) {
    *count = 0;
    if (!strcmp(list, "all")) {
        int n = porta_device_count();
        for (int i = 0; i < n && *count < CLI_MAX_DEVICES; i++)
            if (!porta_device_get(i, &devices[*count])) (*count)++;
        return 0;
    }
    char buffer[256];
    if (strlen(list) >= sizeof buffer)
        return cli_usage(command, "--devices expects a list of at most %zu characters",
                         sizeof buffer - 1);
    snprintf(buffer, sizeof buffer, "%s", list);
    for (char *save = NULL, *item = strtok_r(buffer, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        if (*count == CLI_MAX_DEVICES)
            return cli_usage(command, "at most %d devices", CLI_MAX_DEVICES);
        int code = cli_device(command, item, &devices[*count]);
        if (code) return code;
        (*count)++;
    }
    return *count ? 0 : cli_usage(command, "--devices names no device");
}

int cli_parse_size(const char *command, const char *text, cli_size *out) {
    const char *equals = strchr(text, '=');
    const char *number = equals ? equals + 1 : NULL;
    char *end = NULL;
    errno = 0;
    long long n = number ? strtoll(number, &end, 10) : 0;
    if (!equals || equals == text)
        return cli_usage(command, "--size expects SYMBOL=N, got '%s'", text);
    if (end == number || *end || errno == ERANGE || !isdigit((unsigned char)*number) || n < 1 ||
        n > INT32_MAX)
        return cli_usage(command, "--size %.*s expects a size of 1..%d, got '%s'",
                         (int)(equals - text), text, INT32_MAX, number);
    *out = (cli_size){text, (size_t)(equals - text), n};
    return 0;
}

/* Whether the list ("n, seq") holds the name of `length` characters. */
static bool listed(const char *list, const char *name, size_t length) {
    for (const char *item = list; *item;) {
        size_t n = strcspn(item, ",");
        if (n == length && !strncmp(item, name, length)) return true;
        item += n;
        item += strspn(item, ", ");
    }
    return false;
}

/* The symbolic dims of the model's inputs, each once: "n, seq". */
static void model_symbols(const porta_model *model, char *list, size_t cap) {
    size_t used = 0;
    list[0] = '\0';
    for (int i = 0; i < porta_model_input_count(model); i++) {
        porta_model_input_info info;
        if (porta_model_input_info_get(model, i, &info)) continue;
        for (int d = 0; d < info.rank; d++) {
            const char *symbol = info.symbols[d];
            if (*symbol && used < cap && !listed(list, symbol, strlen(symbol)))
                used += (size_t)snprintf(list + used, cap - used, "%s%s", used ? ", " : "",
                                         symbol);
        }
    }
}

int cli_check_sizes(const char *command, const porta_model *model, const cli_size *sizes,
                    int count) {
    char known[4096];
    model_symbols(model, known, sizeof known);
    for (int i = 0; i < count; i++)
        if (!listed(known, sizes[i].symbol, sizes[i].symbol_length))
            return cli_usage(command,
                             "--size names '%.*s', which is no symbolic dim of the model's "
                             "inputs (%s%s)",
                             (int)sizes[i].symbol_length, sizes[i].symbol,
                             *known ? "they have: " : "they have none", known);
    return 0;
}

static int64_t symbol_size(const cli_size *sizes, int size_count, const char *symbol) {
    for (int i = 0; i < size_count; i++)
        if (strlen(symbol) == sizes[i].symbol_length &&
            !strncmp(sizes[i].symbol, symbol, sizes[i].symbol_length))
            return sizes[i].value;
    return 1;
}

porta_status *cli_random_inputs(const porta_model *model, const cli_size *sizes,
                                int size_count, porta_tensor **inputs, int64_t *batch) {
    porta_device *first;
    porta_status *status = porta_device_get(0, &first);
    int n = porta_model_input_count(model);
    for (int i = 0; i < n; i++) inputs[i] = NULL;
    for (int i = 0; !status && i < n; i++) {
        porta_model_input_info info;
        status = porta_model_input_info_get(model, i, &info);
        if (status) break;
        int64_t dims[PORTA_MAX_RANK];
        for (int d = 0; d < info.rank; d++)
            dims[d] = info.sizes[d] >= 0 ? info.sizes[d]
                                         : symbol_size(sizes, size_count, info.symbols[d]);
        if (i == 0) *batch = info.rank ? dims[0] : 1;
        status = porta_tensor_full(first, info.dtype, info.rank, dims, 0.0, &inputs[i]);
        if (!status && porta_dtype_is_float(info.dtype))
            status = porta_random_uniform(inputs[i], 1234, 0, -1.0, 1.0);
    }
    return status;
}

porta_status *cli_run_once(porta_model *model, porta_device *device, porta_tensor **inputs,
                           porta_tensor **outputs) {
    int n_in = porta_model_input_count(model), n_out = porta_model_output_count(model);
    porta_status *status = porta_model_run(model, device, inputs, n_in, outputs, n_out);
    if (!status) status = porta_device_synchronize(device);
    cli_release(outputs, n_out);
    return status;
}

double cli_now_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
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
