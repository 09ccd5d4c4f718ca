/* Writing safetensors files: the header is built and checked in memory,
 * then the file is written as core_output writes a user-named file (under
 * a temporary name beside it, renamed over it when complete). */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/output_file.h"
#include "core/status.h"
#include "core/text.h"
#include "io/safetensors.h"
#include "io/utf8.h"

/* ---- checking the arguments ---- */

static porta_status *check_string(const char *what, const char *s) {
    size_t bad;
    if (!s)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_save: expected a string for %s, got NULL", what);
    if (!utf8_is_valid(s, strlen(s), &bad)) {
        char quoted[UTF8_EXCERPT_CAP];
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_save: expected valid UTF-8 in %s, got %s (bad byte at "
                           "%zu)",
                           what, utf8_excerpt(s, strlen(s), quoted, sizeof quoted), bad);
    }
    return NULL;
}

static int compare_strings(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names must be unique; sorting copies of the pointers finds repeats. */
static porta_status *check_unique(const char *what, const char **names, size_t count) {
    if (count < 2) return NULL;
    const char **sorted = malloc(count * sizeof *sorted);
    if (!sorted)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "safetensors_save: no memory to check names");
    memcpy(sorted, names, count * sizeof *sorted);
    qsort(sorted, count, sizeof *sorted, compare_strings);
    porta_status *status = NULL;
    for (size_t i = 1; i < count && !status; i++)
        if (!strcmp(sorted[i - 1], sorted[i])) {
            char quoted[UTF8_EXCERPT_CAP];
            status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                 "safetensors_save: expected unique %s, got %s twice", what,
                                 utf8_excerpt(sorted[i], strlen(sorted[i]), quoted, sizeof quoted));
        }
    free(sorted);
    return status;
}

static porta_status *check_arguments(const porta_safetensors_entry *tensors, int count,
                                     const porta_safetensors_pair *metadata, int metadata_count) {
    if (count < 0 || metadata_count < 0 || (count && !tensors) || (metadata_count && !metadata))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "safetensors_save: expected arrays for %d tensors and %d metadata "
                           "entries, got a NULL array or a negative count",
                           count, metadata_count);
    size_t most = (size_t)(count > metadata_count ? count : metadata_count);
    const char **names = malloc((most ? most : 1) * sizeof *names);
    if (!names) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "safetensors_save: no memory");
    porta_status *status = NULL;
    for (int i = 0; i < count && !status; i++) {
        status = check_string("a tensor name", tensors[i].name);
        if (!status && !strcmp(tensors[i].name, "__metadata__"))
            status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                 "safetensors_save: expected a tensor name other than "
                                 "\"__metadata__\" (the metadata's key), got it for tensor %d",
                                 i);
        if (!status && !tensors[i].tensor)
            status = porta_error(PORTA_ERR_INVALID_ARGUMENT,
                                 "safetensors_save: expected a tensor for name %d, got NULL", i);
        if (!status && !st_dtype_name(porta_tensor_dtype(tensors[i].tensor)))
            status = porta_error(PORTA_ERR_DTYPE,
                                 "safetensors_save: tensor \"%s\" is %s, which the safetensors "
                                 "format has no name for",
                                 tensors[i].name, porta_dtype_name(porta_tensor_dtype(tensors[i].tensor)));
        if (!status) names[i] = tensors[i].name;
    }
    if (!status) status = check_unique("tensor names", names, (size_t)count);
    for (int i = 0; i < metadata_count && !status; i++) {
        status = check_string("a metadata key", metadata[i].key);
        if (!status) status = check_string("a metadata value", metadata[i].value);
        if (!status) names[i] = metadata[i].key;
    }
    if (!status) status = check_unique("metadata keys", names, (size_t)metadata_count);
    free(names);
    return status;
}

/* ---- the header ---- */

/* The header's JSON, padded with spaces so the data starts at a multiple
 * of 8 bytes (as the reference writer does: aligned loads stay possible).
 * *largest receives the largest tensor's byte size. */
static porta_status *build_header(const porta_safetensors_entry *tensors, const int *order,
                                  int count, const porta_safetensors_pair *metadata,
                                  int metadata_count, core_text *header, size_t *largest) {
    text_append(header, "{", 1);
    if (metadata_count) {
        text_puts(header, "\"__metadata__\":{");
        for (int i = 0; i < metadata_count; i++) {
            if (i) text_append(header, ",", 1);
            text_json_cstring(header, metadata[i].key);
            text_append(header, ":", 1);
            text_json_cstring(header, metadata[i].value);
        }
        text_append(header, "}", 1);
    }
    uint64_t offset = 0;
    *largest = 0;
    for (int k = 0; k < count; k++) {
        int i = order[k];
        const porta_tensor *t = tensors[i].tensor;
        porta_dtype dtype = porta_tensor_dtype(t);
        uint64_t bytes = (uint64_t)porta_tensor_numel(t) * porta_dtype_size(dtype);
        if (bytes > SIZE_MAX || offset > UINT64_MAX - bytes)
            return porta_error(PORTA_ERR_OUT_OF_RANGE,
                               "safetensors_save: expected tensors totalling less than 2^64 "
                               "bytes, got more by tensor %d",
                               i);
        if (bytes > *largest) *largest = (size_t)bytes;
        if (metadata_count || k) text_append(header, ",", 1);
        text_json_cstring(header, tensors[i].name);
        text_printf(header, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype_name(dtype));
        for (int d = 0; d < porta_tensor_rank(t); d++)
            text_printf(header, "%s%lld", d ? "," : "", (long long)porta_tensor_sizes(t)[d]);
        text_printf(header, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)offset,
                    (unsigned long long)(offset + bytes));
        offset += bytes;
    }
    text_append(header, "}", 1);
    while (!header->failed && (8 + header->length) % 8) text_append(header, " ", 1);
    if (header->failed)
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "safetensors_save: no memory for the header");
    if (header->length > PORTA_SAFETENSORS_MAX_HEADER)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "safetensors_save: expected a header of at most %u bytes, got %zu",
                           PORTA_SAFETENSORS_MAX_HEADER, header->length);
    return NULL;
}

/* ---- the file ---- */

static porta_status *write_contents(core_output *file, const core_text *header,
                                    const porta_safetensors_entry *tensors, const int *order,
                                    int count, size_t largest) {
    unsigned char length[8];
    uint64_t n = header->length;
    for (int i = 0; i < 8; i++) length[i] = (unsigned char)(n >> (8 * i));
    PORTA_TRY(core_output_write(file, length, sizeof length));
    PORTA_TRY(core_output_write(file, header->chars, header->length));
    /* One staging block for every tensor: tensors may live on any device
     * and have any strides; porta_tensor_to_host packs them row-major. */
    void *staging;
    PORTA_TRY(core_host_alloc(largest, "safetensors staging", &staging));
    porta_status *status = NULL;
    for (int k = 0; k < count && !status; k++) {
        const porta_tensor *t = tensors[order[k]].tensor;
        size_t bytes = (size_t)porta_tensor_numel(t) * porta_dtype_size(porta_tensor_dtype(t));
        status = porta_tensor_to_host(t, staging, bytes);
        if (!status) status = core_output_write(file, staging, bytes);
    }
    core_host_free(staging);
    return status;
}

/* The data's order: by element size, largest first, keeping the caller's
 * order otherwise. As the header's length is padded to a multiple of 8 and
 * sizes are powers of two, every tensor's data is then aligned to its
 * element size, so every tensor can be loaded without a copy. */
static int *data_order(const porta_safetensors_entry *tensors, int count) {
    int *order = malloc((count ? (size_t)count : 1) * sizeof *order);
    if (!order) return NULL;
    int n = 0;
    for (size_t size = 8; size >= 1; size /= 2)
        for (int i = 0; i < count; i++)
            if (porta_dtype_size(porta_tensor_dtype(tensors[i].tensor)) == size) order[n++] = i;
    return order;
}

porta_status *porta_safetensors_save(const char *path, const porta_safetensors_entry *tensors,
                                     int count, const porta_safetensors_pair *metadata,
                                     int metadata_count) {
    if (!path)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "safetensors_save: expected a path, got NULL");
    PORTA_TRY(check_arguments(tensors, count, metadata, metadata_count));
    int *order = data_order(tensors, count);
    if (!order) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "safetensors_save: no memory");
    core_text header = {0};
    size_t largest;
    porta_status *status =
        build_header(tensors, order, count, metadata, metadata_count, &header, &largest);
    core_output file;
    if (!status) status = core_output_open(path, "safetensors file", &file);
    if (!status)
        status = core_output_close(
            &file, write_contents(&file, &header, tensors, order, count, largest));
    text_free(&header);
    free(order);
    return status;
}
