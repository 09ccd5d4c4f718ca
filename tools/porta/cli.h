/* What the commands of the porta tool share: reporting errors, naming
 * devices, reading a model's inputs from a safetensors file. */
#ifndef PORTA_TOOL_CLI_H
#define PORTA_TOOL_CLI_H

#include "porta.h"
#include "porta_model.h"

/* Each command: argv[0] is its name; returns the exit status (0 success,
 * 1 failure at run time, 2 bad usage). */
int cmd_run(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_inspect(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_generate(int argc, char **argv);

/* Prints "porta COMMAND: message", frees the status, returns 1. */
int cli_fail(const char *command, porta_status *status);
/* Prints "porta COMMAND: message (try 'porta COMMAND --help')", returns 2. */
int cli_usage(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "porta:N", "N", a backend name ("cpu", "opencl": its first device), or
 * "porta:auto[:OBJECTIVE]" (the device select_device picks from stored
 * measurements, src/report/select.h; prices from $PORTA_PRICES for "cost").
 * Returns 0, or prints the error and returns 2. */
int cli_device(const char *command, const char *text, porta_device **out);

/* A count option's value: an integer from `least` to 1000000. Returns 0,
 * or prints the error and returns 2. */
int cli_count(const char *command, const char *option, const char *value, int least, int *out);

/* A duration option's value: seconds, a finite number above 0 (decimals
 * allowed). Returns 0, or prints the error and returns 2. */
int cli_seconds(const char *command, const char *option, const char *value, double *out);

/* The devices a --devices option names: "all", or a comma-separated list
 * of what cli_device takes; at most CLI_MAX_DEVICES. Returns 0, or prints
 * the error and returns 2. */
#define CLI_MAX_DEVICES 64
int cli_devices(const char *command, const char *list, porta_device **devices, int *count);

/* The model's inputs from a safetensors file: tensors named as the
 * model's inputs, else named "0", "1", ... by position, else (one input,
 * one tensor) the only tensor. inputs[] receives one new tensor per input
 * on the CPU. Returns 0, or prints the error and returns 1. */
int cli_read_inputs(const char *command, const porta_model *model, const char *path,
                    porta_tensor **inputs);
/* A --size SYMBOL=N option: the size of a symbolic dim for random inputs. */
typedef struct cli_size {
    const char *symbol; /* not NUL-terminated: symbol_length characters */
    size_t symbol_length;
    int64_t value;
} cli_size;
/* Parses "SYMBOL=N", N from 1 to INT32_MAX. Returns 0, or prints the error
 * and returns 2. */
int cli_parse_size(const char *command, const char *text, cli_size *out);
/* Checks that each size names a symbolic dim of the model's inputs.
 * Returns 0, or prints the error (with the dims there are) and returns 2. */
int cli_check_sizes(const char *command, const porta_model *model, const cli_size *sizes,
                    int count);
/* Inputs of the model's declared shapes on porta:0 (floats uniform in
 * [-1, 1), other dtypes 0) for timing runs; a symbolic dim takes its size
 * from sizes[], else 1. *batch is dim 0 of the first input. On failure the
 * inputs made so far are left for cli_release. */
porta_status *cli_random_inputs(const porta_model *model, const cli_size *sizes, int size_count,
                                porta_tensor **inputs, int64_t *batch);
/* One run of the model on `device`, waited for; its outputs released. */
porta_status *cli_run_once(porta_model *model, porta_device *device, porta_tensor **inputs,
                           porta_tensor **outputs);
/* A monotonic clock in seconds. */
double cli_now_seconds(void);

/* Releases the first count tensors (NULL entries skipped). */
void cli_release(porta_tensor **tensors, int count);

#endif
