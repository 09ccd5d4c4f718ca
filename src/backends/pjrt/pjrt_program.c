/* Programs on a PJRT device: StableHLO text compiled by the plugin, cached
 * per device by the text (a hash finds the entry, the text confirms it),
 * and run on storages' arrays (pjrt_runtime.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/pjrt/pjrt_backend.h"
#include "core/status.h"
#include "runtime/compile_stats.h"

struct pjrt_program {
    pjrt_program *next;
    uint64_t hash;
    char *text;
    size_t length;
    PJRT_LoadedExecutable *executable;
    size_t outputs; /* the results @main returns */
};

/* A serialized xla.CompileOptionsProto: executable_build_options { one
 * replica, one partition } and compile_portable_executable, so the program
 * runs on whichever of the client's devices Execute names. The plugin
 * aborts the process on empty or malformed options: never pass others. */
static const char compile_options[] = {0x1a, 0x04, 0x20, 0x01, 0x28, 0x01, 0x20, 0x01};

/* FNV-1a: the key only picks the list entries to compare texts with. */
static uint64_t text_hash(const char *text, size_t length) {
    uint64_t hash = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < length; i++) hash = (hash ^ (unsigned char)text[i]) * 0x100000001b3ull;
    return hash;
}

static pjrt_program *find(pjrt_device_state *s, uint64_t hash, const char *text, size_t length) {
    for (pjrt_program *p = s->programs; p; p = p->next)
        if (p->hash == hash && p->length == length && memcmp(p->text, text, length) == 0)
            return p;
    return NULL;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec * 1e-9;
}

/* How many results the compiled @main returns. */
static porta_status *count_outputs(const PJRT_Api *api, PJRT_LoadedExecutable *loaded,
                                   size_t *outputs) {
    PJRT_LoadedExecutable_GetExecutable_Args get = {.struct_size = sizeof get,
                                                    .loaded_executable = loaded};
    PORTA_TRY(pjrt_status(api, api->PJRT_LoadedExecutable_GetExecutable(&get),
                          "LoadedExecutable_GetExecutable"));
    PJRT_Executable_NumOutputs_Args count = {.struct_size = sizeof count,
                                             .executable = get.executable};
    porta_status *status =
        pjrt_status(api, api->PJRT_Executable_NumOutputs(&count), "Executable_NumOutputs");
    PJRT_Executable_Destroy_Args destroy = {.struct_size = sizeof destroy,
                                            .executable = get.executable};
    porta_status_free(
        pjrt_status(api, api->PJRT_Executable_Destroy(&destroy), "Executable_Destroy"));
    *outputs = count.num_outputs;
    return status;
}

static void destroy_loaded(const PJRT_Api *api, PJRT_LoadedExecutable *loaded) {
    PJRT_LoadedExecutable_Destroy_Args destroy = {.struct_size = sizeof destroy,
                                                  .executable = loaded};
    porta_status_free(pjrt_status(api, api->PJRT_LoadedExecutable_Destroy(&destroy),
                                  "LoadedExecutable_Destroy"));
}

static porta_status *compile(pjrt_device_state *s, const char *text, size_t length,
                             pjrt_program *out) {
    const PJRT_Api *api = s->plugin->api;
    static const char format[] = "mlir";
    PJRT_Program program = {.struct_size = sizeof program,
                            .code = (char *)text, /* read only, despite the type */
                            .code_size = length,
                            .format = format,
                            .format_size = sizeof format - 1};
    PJRT_Client_Compile_Args args = {.struct_size = sizeof args,
                                     .client = s->plugin->client,
                                     .program = &program,
                                     .compile_options = compile_options,
                                     .compile_options_size = sizeof compile_options};
    double begin = seconds_now();
    PORTA_TRY(porta_error_context(
        pjrt_status(api, api->PJRT_Client_Compile(&args), "Client_Compile"),
        "compiling a StableHLO module for %s", s->name));
    compiler_count_compile_seconds(seconds_now() - begin);
    compiler_count(COUNTER_KERNELS_COMPILED, 1);
    porta_status *status = count_outputs(api, args.executable, &out->outputs);
    if (status) {
        destroy_loaded(api, args.executable);
        return status;
    }
    out->executable = args.executable;
    return NULL;
}

/* From the disk cache, else compiled (and then kept there). `text` is
 * NUL-terminated. */
static porta_status *load_or_compile(pjrt_device_state *s, const char *text, size_t length,
                                     pjrt_program *out) {
    const PJRT_Api *api = s->plugin->api;
    PJRT_LoadedExecutable *loaded = NULL;
    if (pjrt_disk_load(s, text, &loaded)) {
        porta_status *status = count_outputs(api, loaded, &out->outputs);
        if (!status) {
            compiler_count(COUNTER_KERNEL_DISK_HITS, 1);
            out->executable = loaded;
            return NULL;
        }
        porta_status_free(status);
        destroy_loaded(api, loaded);
    }
    PORTA_TRY(compile(s, text, length, out));
    pjrt_disk_save(s, text, out->executable);
    return NULL;
}

porta_status *pjrt_program_get(porta_device *device, const char *text, size_t length,
                               pjrt_program **out) {
    if (!device || !text || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "pjrt_program_get: NULL argument");
    if (!length)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "pjrt_program_get: expected a StableHLO module, got empty text");
    pjrt_device_state *s = pjrt_state_of(device);
    uint64_t hash = text_hash(text, length);
    /* compiled under the lock: two threads wanting one module compile it once */
    pthread_mutex_lock(&s->lock);
    porta_status *status = NULL;
    pjrt_program *program = find(s, hash, text, length);
    if (program) {
        compiler_count(COUNTER_KERNEL_MEMORY_HITS, 1);
    } else {
        program = calloc(1, sizeof *program);
        char *copy = malloc(length + 1);
        if (!program || !copy) {
            status = porta_error(PORTA_ERR_OUT_OF_MEMORY, "PJRT: caching a program");
        } else {
            memcpy(copy, text, length);
            copy[length] = '\0';
            status = load_or_compile(s, copy, length, program);
        }
        if (status) {
            free(copy);
            free(program);
            program = NULL;
        } else {
            program->hash = hash;
            program->text = copy;
            program->length = length;
            program->next = s->programs;
            s->programs = program;
        }
    }
    pthread_mutex_unlock(&s->lock);
    *out = program;
    return status;
}

/* Runs in flight before a run waits for the earlier ones: bounds the events
 * kept and how far the host runs ahead of the device. */
#define MAX_PENDING_RUNS 256

/* Awaits every kept event; the first failure stays for pjrt_synchronize.
 * Call with the lock. */
static void drain_pending(pjrt_device_state *s) {
    for (int i = 0; i < s->pending_count; i++) {
        porta_status *status = pjrt_await(s->plugin->api, s->pending[i], "program run");
        if (!s->failure) s->failure = status;
        else porta_status_free(status);
    }
    s->pending_count = 0;
}

/* Keeps the completion event for pjrt_synchronize. Call with the lock. */
static void keep_pending(pjrt_device_state *s, PJRT_Event *event) {
    if (!event) return;
    if (s->pending_count == MAX_PENDING_RUNS) drain_pending(s);
    if (!s->pending) {
        s->pending = malloc(MAX_PENDING_RUNS * sizeof *s->pending);
        if (!s->pending) {
            s->pending_count = 0;
            porta_status *status = pjrt_await(s->plugin->api, event, "program run");
            if (!s->failure) s->failure = status;
            else porta_status_free(status);
            return;
        }
    }
    s->pending[s->pending_count++] = event;
}

/* Storages never written get an array of zeros, the bytes they hold. */
static porta_status *materialize(pjrt_device_state *s, pjrt_storage *const *storages, int count) {
    for (int i = 0; i < count; i++)
        if (!storages[i]->array)
            PORTA_TRY(pjrt_upload(s, NULL, storages[i]->bytes, &storages[i]->array));
    return NULL;
}

/* A module may donate an argument's array to a result (an argument marked
 * tf.aliasing_output): the array is then gone. That is right only for a
 * storage that is a result here, whose array the result replaces, and
 * that is passed once; every other argument is listed in `kept` (room for
 * arg_count), so the plugin keeps it whatever the module says. Returns
 * their count. */
static size_t list_non_donatable(pjrt_storage *const *args, int arg_count,
                                 pjrt_storage *const *results, int result_count,
                                 int64_t *kept) {
    size_t count = 0;
    for (int i = 0; i < arg_count; i++) {
        bool donatable = false;
        for (int r = 0; r < result_count && !donatable; r++) donatable = results[r] == args[i];
        for (int j = 0; j < arg_count && donatable; j++) donatable = j == i || args[j] != args[i];
        if (!donatable) kept[count++] = i;
    }
    return count;
}

porta_status *pjrt_program_run(porta_device *device, pjrt_program *program,
                               pjrt_storage *const *args, int arg_count,
                               pjrt_storage *const *results, int result_count) {
    if (!device || !program || arg_count < 0 || result_count < 0 || (arg_count && !args) ||
        (result_count && !results))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "pjrt_program_run: bad arguments");
    pjrt_device_state *s = pjrt_state_of(device);
    const PJRT_Api *api = s->plugin->api;
    /* the plugin fills in as many outputs as @main returns */
    if ((size_t)result_count != program->outputs)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "pjrt_program_run: the module returns %zu results; expected one per "
                           "result storage, %d",
                           program->outputs, result_count);
    PORTA_TRY(materialize(s, args, arg_count));
    PJRT_Buffer **inputs = calloc((size_t)arg_count + 1, sizeof *inputs);
    PJRT_Buffer **outputs = calloc((size_t)result_count + 1, sizeof *outputs);
    if (!inputs || !outputs) {
        free(inputs);
        free(outputs);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "pjrt_program_run: argument lists");
    }
    for (int i = 0; i < arg_count; i++) inputs[i] = args[i]->array;
    int64_t *kept = calloc((size_t)arg_count + 1, sizeof *kept);
    if (!kept) {
        free(inputs);
        free(outputs);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "pjrt_program_run: argument lists");
    }
    size_t kept_count = list_non_donatable(args, arg_count, results, result_count, kept);
    PJRT_ExecuteOptions options = {.struct_size = sizeof options,
                                   .non_donatable_input_indices = kept,
                                   .num_non_donatable_input_indices = kept_count};
    PJRT_Buffer *const *argument_lists[1] = {inputs};
    PJRT_Buffer **output_lists[1] = {outputs};
    PJRT_Event *complete[1] = {NULL};
    PJRT_LoadedExecutable_Execute_Args run = {.struct_size = sizeof run,
                                              .executable = program->executable,
                                              .options = &options,
                                              .argument_lists = argument_lists,
                                              .num_devices = 1,
                                              .num_args = (size_t)arg_count,
                                              .output_lists = output_lists,
                                              .device_complete_events = complete,
                                              .execute_device = s->device};
    pthread_mutex_lock(&s->lock);
    porta_status *status = pjrt_status(api, api->PJRT_LoadedExecutable_Execute(&run),
                                       "LoadedExecutable_Execute");
    if (!status) keep_pending(s, complete[0]);
    pthread_mutex_unlock(&s->lock);
    if (!status)
        for (int i = 0; i < result_count; i++) {
            pjrt_buffer_destroy(api, results[i]->array);
            results[i]->array = outputs[i];
            outputs[i] = NULL;
        }
    free(inputs);
    free(outputs);
    free(kept);
    return status;
}

porta_status *pjrt_synchronize(porta_device *device) {
    pjrt_device_state *s = pjrt_state_of(device);
    pthread_mutex_lock(&s->lock);
    drain_pending(s);
    porta_status *failure = s->failure;
    s->failure = NULL;
    pthread_mutex_unlock(&s->lock);
    return failure;
}
