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

/* Prints "porta COMMAND: message", frees the status, returns 1. */
int cli_fail(const char *command, porta_status *status);
/* Prints "porta COMMAND: message (try 'porta COMMAND --help')", returns 2. */
int cli_usage(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "porta:N", "N", a backend name ("cpu", "opencl": its first device), or
 * "porta:auto[:OBJECTIVE]" (the device select_device picks from stored
 * measurements, src/report/select.h; prices from $PORTA_PRICES for "cost").
 * Returns 0, or prints the error and returns 2. */
int cli_device(const char *command, const char *text, porta_device **out);

/* The model's inputs from a safetensors file: tensors named as the
 * model's inputs, else named "0", "1", ... by position, else (one input,
 * one tensor) the only tensor. inputs[] receives one new tensor per input
 * on the CPU. Returns 0, or prints the error and returns 1. */
int cli_read_inputs(const char *command, const porta_model *model, const char *path,
                    porta_tensor **inputs);
/* Releases the first count tensors (NULL entries skipped). */
void cli_release(porta_tensor **tensors, int count);

#endif
