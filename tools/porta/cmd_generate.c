/* porta generate MODEL --ids 1,2,3 [--max-tokens N] [--temperature T]
 * [--top-k K] [--top-p P] [--seed S] [--stop ID,...] [--device D]: token
 * generation with a KV-cache model (porta_generate.h), the generated ids
 * printed comma-separated on one line. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "porta_generate.h"

#define MAX_IDS 65536

/* "1,2,3": *count ids, each an integer >= 0. Returns 0 or prints and 2. */
static int parse_ids(const char *option, const char *text, int64_t *ids, int *count) {
    *count = 0;
    const char *p = text;
    while (*p) {
        char *end;
        errno = 0;
        long long value = strtoll(p, &end, 10);
        if (end == p || errno || value < 0 || (*end && *end != ',') || *count >= MAX_IDS)
            return cli_usage("generate", "%s: expected token ids >= 0 separated by commas "
                             "(at most %d), given '%s'", option, MAX_IDS, text);
        ids[(*count)++] = value;
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return cli_usage("generate", "%s: expected an id after the last comma, given '%s'",
                             option, text);
    }
    if (!*count) return cli_usage("generate", "%s: expected at least one id, given ''", option);
    return 0;
}

static int parse_number(const char *option, const char *text, double least, double most,
                        double *out) {
    char *end;
    errno = 0;
    double value = strtod(text, &end);
    if (end == text || *end || errno || !isfinite(value) || value < least || value > most)
        return cli_usage("generate", "%s: expected a number from %g to %g, given '%s'", option,
                         least, most, text);
    *out = value;
    return 0;
}

static int parse_options(int argc, char **argv, const char **model, const char **device,
                         int64_t *prompt, int *prompt_length, int64_t *stops,
                         porta_generate_options *o) {
    bool have_ids = false;
    for (int a = 1; a < argc; a++) {
        const char *name = argv[a];
        if (name[0] != '-') {
            if (*model) return cli_usage("generate", "unexpected argument '%s'", name);
            *model = name;
            continue;
        }
        if (a + 1 >= argc) return cli_usage("generate", "%s needs a value", name);
        const char *value = argv[++a];
        double number = 0;
        int code = 0;
        if (!strcmp(name, "--ids")) {
            code = parse_ids(name, value, prompt, prompt_length);
            have_ids = true;
        } else if (!strcmp(name, "--stop")) {
            code = parse_ids(name, value, stops, &o->stop_count);
        } else if (!strcmp(name, "--device")) {
            *device = value;
        } else if (!strcmp(name, "--max-tokens")) {
            code = cli_count("generate", name, value, 1, &o->max_tokens);
        } else if (!strcmp(name, "--top-k")) {
            code = cli_count("generate", name, value, 0, &o->top_k);
        } else if (!strcmp(name, "--temperature")) {
            code = parse_number(name, value, 0, 1e6, &o->temperature);
        } else if (!strcmp(name, "--top-p")) {
            code = parse_number(name, value, 1e-9, 1, &o->top_p);
        } else if (!strcmp(name, "--seed")) {
            code = parse_number(name, value, 0, 9007199254740992.0, &number);
            if (!code && number != floor(number))
                code = cli_usage("generate", "--seed: expected an integer, given '%s'", value);
            o->seed = (uint64_t)number;
        } else {
            return cli_usage("generate", "unexpected argument '%s'", name);
        }
        if (code) return code;
    }
    if (!*model) return cli_usage("generate", "missing MODEL");
    if (!have_ids) return cli_usage("generate", "missing --ids ID,...");
    return 0;
}

int cmd_generate(int argc, char **argv) {
    const char *model_path = NULL, *device_name = "porta:0";
    int64_t *prompt = malloc(MAX_IDS * sizeof *prompt), *stops = malloc(MAX_IDS * sizeof *stops);
    porta_generate_options o = porta_generate_options_default();
    o.stop_ids = stops;
    int prompt_length = 0, code = 0;
    if (!prompt || !stops) {
        fprintf(stderr, "porta generate: out of memory\n");
        code = 1;
    }
    if (!code)
        code = parse_options(argc, argv, &model_path, &device_name, prompt, &prompt_length,
                             stops, &o);
    porta_device *device = NULL;
    if (!code) code = cli_device("generate", device_name, &device);
    porta_model *model = NULL;
    porta_generator *generator = NULL;
    if (!code) {
        porta_status *status = porta_model_load(model_path, &model);
        if (!status) status = porta_generator_create(model, device, 1, &generator);
        int64_t *tokens = NULL;
        int count = 0;
        if (!status)
            status = porta_generate(generator, prompt, prompt_length, &o, NULL, NULL, &tokens,
                                    &count);
        if (status) {
            code = cli_fail("generate", status);
        } else {
            for (int i = 0; i < count; i++) printf("%s%lld", i ? "," : "", (long long)tokens[i]);
            printf("\n");
        }
        free(tokens);
    }
    porta_generator_free(generator);
    porta_model_free(model);
    free(prompt);
    free(stops);
    return code;
}
