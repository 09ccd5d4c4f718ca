/* The validated contents of a safetensors header, shared by the reader's
 * parts: header validation (safetensors_header.c) and the file handle
 * (safetensors_read.c). */
#ifndef PORTA_IO_SAFETENSORS_H
#define PORTA_IO_SAFETENSORS_H

#include <stdint.h>

#include "io/json.h"
#include "porta_io.h"

typedef struct st_tensor {
    const char *name; /* NUL-terminated, no NUL inside, owned by the JSON */
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    uint64_t begin, end; /* in the data section */
    size_t json_index;   /* position in the header, to order equal ranges */
} st_tensor;

typedef struct st_header {
    json_document *json;
    st_tensor *tensors;  /* in data order */
    size_t count;
    const st_tensor **by_name; /* the tensors sorted by name */
    porta_safetensors_pair *metadata;
    size_t metadata_count;
    uint64_t data_start; /* 8 + header length */
} st_header;

/* Validates the whole file of `size` bytes at `bytes` (the header and how
 * the tensors lay out the data section) and fills *out. */
porta_status *st_header_parse(const unsigned char *bytes, size_t size, st_header *out);
void st_header_free(st_header *header);
/* The tensor called `name`, or NULL. */
const st_tensor *st_header_find(const st_header *header, const char *name);

/* safetensors' dtype names ("F32") and back. */
const char *st_dtype_name(porta_dtype dtype);
bool st_dtype_from_name(const char *name, size_t length, porta_dtype *out);

#endif
