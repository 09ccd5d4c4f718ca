/* libFuzzer target for the .pt2 reader. An input starting with "PK" is
 * parsed as the archive itself; any other input is a list of records
 * separated by "\n@@\n", each a name line and the entry's bytes, which the
 * target writes into a valid ZIP archive first: so the fuzzer reaches the
 * JSON configs and the program past the archive's CRC-32s. An archive is
 * either rejected with a status or every tensor it lists can be taken,
 * with exactly the elements its view addresses in its storage, or is
 * refused with a status; and its program goes the way porta_model_load
 * takes it: written as a .porta graph, which is parsed and checked. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/pt2_archive.h"
#include "io/zip.h"
#include "model/pt2_graph.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static porta_device *cpu;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    porta_status *status = porta_set_num_threads(1);
    if (!status) status = porta_device_get(0, &cpu);
    if (status) abort();
    porta_set_memory_limit(256u << 20); /* huge views must fail with a status */
    return 0;
}

static void check(porta_status *status) {
    if (status && !porta_status_message(status)) abort();
    porta_status_free(status);
}

enum { MAX_RECORDS = 64 };
static const char separator[] = "\n@@\n";

/* Splits the input into records and writes them as an archive. */
static unsigned char *build_archive(const uint8_t *data, size_t size, size_t *archive_size) {
    zip_write_entry entries[MAX_RECORDS];
    char *names[MAX_RECORDS];
    size_t count = 0;
    const uint8_t *p = data, *end = data + size;
    while (p < end && count < MAX_RECORDS) {
        const uint8_t *next = memmem(p, (size_t)(end - p), separator, 4);
        const uint8_t *stop = next ? next : end;
        const uint8_t *newline = memchr(p, '\n', (size_t)(stop - p));
        const uint8_t *body = newline ? newline + 1 : stop;
        const uint8_t *name_end = newline ? newline : stop;
        names[count] = strndup((const char *)p, (size_t)(name_end - p));
        if (!names[count]) break;
        entries[count] = (zip_write_entry){names[count], body, (size_t)(stop - body)};
        count++;
        p = next ? next + 4 : end;
    }
    zip_write_options options = {.descriptor = true, .zip64_end = true, .alignment = 64};
    unsigned char *archive = NULL;
    porta_status *status = zip_write_memory(entries, count, &options, &archive, archive_size);
    check(status);
    for (size_t i = 0; i < count; i++) free(names[i]);
    return status ? NULL : archive;
}

/* The element at each index of the view, gathered by hand from the
 * storage, against what the tensor reads back. */
static void check_tensor(const pt2_tensor_info *t, const unsigned char *storage,
                         porta_tensor *tensor) {
    int64_t numel = porta_tensor_numel(tensor);
    size_t element = porta_dtype_size(t->dtype);
    if (numel > (1 << 22)) return;
    unsigned char *got = malloc((size_t)numel * element + 1);
    if (!got) return;
    check(porta_tensor_to_host(tensor, got, (size_t)numel * element));
    int64_t index[PORTA_MAX_RANK] = {0};
    for (int64_t n = 0; n < numel; n++) {
        int64_t at = t->storage_offset;
        for (int d = 0; d < t->rank; d++) at += index[d] * t->strides[d];
        if ((uint64_t)(at + 1) * element > t->storage_bytes) abort();
        if (memcmp(got + n * (int64_t)element, storage + at * (int64_t)element, element)) abort();
        for (int d = t->rank - 1; d >= 0; d--) {
            if (++index[d] < t->sizes[d]) break;
            index[d] = 0;
        }
    }
    free(got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *built = NULL;
    const void *bytes = data;
    size_t length = size;
    if (size < 2 || memcmp(data, "PK", 2)) {
        built = build_archive(data, size, &length);
        if (!built) return 0;
        bytes = built;
    }
    pt2_archive *archive = NULL;
    porta_status *status = pt2_parse(bytes, length, NULL, &archive);
    if (status) {
        check(status);
        free(built);
        return 0;
    }
    if (!pt2_program(archive) || !pt2_model_name(archive)) abort();
    zip_archive *zip = NULL;
    check(zip_parse(bytes, length, &zip)); /* accepted above, so accepted here */
    if (!zip) abort();
    for (int i = 0; i < pt2_tensor_count(archive); i++) {
        const pt2_tensor_info *t = pt2_tensor_at(archive, i);
        if (pt2_tensor_find(archive, t->name) != t) abort();
        porta_tensor *tensor = NULL;
        status = pt2_tensor_get(archive, t->name, cpu, &tensor);
        if (status) {
            check(status); /* pickled, bad bool bytes, over the memory limit */
            continue;
        }
        const zip_entry *e = zip_find(zip, t->entry);
        if (!e) abort();
        check_tensor(t, e->data, tensor);
        porta_tensor_release(tensor);
    }
    zip_close(zip);
    core_text text = {0};
    pt2_weight_names names = {0};
    status = pt2_graph_to_porta(archive, &text, &names);
    if (!status) status = text_failure(&text, "graph");
    model_program *graph = NULL;
    if (!status) status = model_program_parse(text.chars, text.length, &graph);
    check(status);
    model_program_free(graph);
    pt2_weight_names_free(&names);
    text_free(&text);
    pt2_close(archive);
    free(built);
    return 0;
}
