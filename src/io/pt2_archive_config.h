/* The payload configs of a .pt2 archive (data/weights/<model>_weights_config.json,
 * data/constants/<model>_constants_config.json): which entry holds each
 * tensor's storage and how the tensor views it. Shared by the archive
 * handle (pt2_archive.c). */
#ifndef PORTA_IO_PT2_ARCHIVE_CONFIG_H
#define PORTA_IO_PT2_ARCHIVE_CONFIG_H

#include "io/pt2_archive.h"
#include "io/zip.h"

typedef struct pt2_config_source {
    const zip_archive *zip;
    const char *root;        /* "<root>/" */
    const char *config_path; /* the config's entry, for messages */
    const char *directory;   /* "data/weights/" or "data/constants/" */
    pt2_tensor_kind kind;
} pt2_config_source;

/* Parses the config JSON (`text`, `length` bytes) and appends its tensors
 * to *tensors (*count of them, growing), allocating each info's `entry`
 * string; `names` come from the JSON document, which is kept in *documents
 * for the caller to free. */
porta_status *pt2_config_read(const pt2_config_source *source, const char *text, size_t length,
                              json_document **document, pt2_tensor_info **tensors, int *count);

/* The porta dtype of schema.ScalarType `value`, or false. */
bool pt2_dtype_from_scalar_type(int64_t value, porta_dtype *out);

#endif
