/* libFuzzer target: any bytes given to the safetensors reader are either
 * rejected with a status or give a file whose every tensor can be loaded
 * and read back in full (AddressSanitizer checks each access). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "porta_io.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static porta_device *cpu;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    porta_status *status = porta_set_num_threads(1);
    if (!status) status = porta_device_get(0, &cpu);
    if (status) abort();
    return 0;
}

static void check(porta_status *status) {
    /* Every error carries a message; a NULL one would be a bug. */
    if (status && !porta_status_message(status)) abort();
    porta_status_free(status);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_parse(data, size, &file);
    if (status) {
        check(status);
        return 0;
    }
    for (int i = 0; i < porta_safetensors_count(file); i++) {
        const char *name = porta_safetensors_name(file, i);
        porta_safetensors_info info;
        status = porta_safetensors_info_get(file, name, &info);
        if (status) abort(); /* every listed name must be found */
        if (info.data_offset + info.bytes > size) abort();
        porta_tensor *t = NULL;
        status = porta_safetensors_get(file, name, cpu, &t);
        if (status) {
            check(status); /* bad BOOL bytes */
            continue;
        }
        void *copy = malloc(info.bytes ? info.bytes : 1);
        if (copy) {
            check(porta_tensor_to_host(t, copy, info.bytes));
            if (memcmp(copy, data + info.data_offset, info.bytes)) abort();
            free(copy);
        }
        porta_tensor_release(t);
    }
    for (int i = 0; i < porta_safetensors_metadata_count(file); i++) {
        const char *key, *value;
        check(porta_safetensors_metadata_at(file, i, &key, &value));
        if (porta_safetensors_metadata_get(file, key) != value) abort(); /* keys are unique */
    }
    porta_safetensors_close(file);
    return 0;
}
