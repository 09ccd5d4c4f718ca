/* The .pt2 archives torch.export.save writes (PyTorch 2.13), read without
 * Python and without ever unpickling anything.
 *
 * Layout (a ZIP archive, see zip.h, every entry under one root folder named
 * after the file, "<root>/"):
 *   archive_format                  "pt2"
 *   archive_version                 "0" (absent in older archives: 0)
 *   byteorder                       "little"
 *   .data/version, .data/serialization_id   the ZIP writer's own records
 *   models/<model>.json             the serialized ExportedProgram (JSON);
 *                                   torch.export.save names it "model"
 *   data/weights/<model>_weights_config.json
 *   data/constants/<model>_constants_config.json
 *                                   {"config": {fqn: {"path_name",
 *                                   "is_param", "use_pickle", "tensor_meta"}}}
 *   data/weights/weight_<i>, data/constants/tensor_<i>
 *                                   one tensor storage each, raw
 *                                   little-endian bytes; several names may
 *                                   view one storage (tied weights) through
 *                                   tensor_meta's sizes, strides and offset
 *   data/sample_inputs/<model>.pt   pickled example inputs: never read
 * Tensor subclasses (use_pickle: true) and custom objects
 * (custom_obj_<i>, opaque_obj_<i>) exist only pickled: they are listed but
 * taking them fails, naming the entry.
 *
 * Checked when opened: the archive (zip.h), archive_format, archive_version,
 * byteorder, the model JSON's schema_version (major PT2_SCHEMA_MAJOR, as
 * PyTorch's own loader requires; any minor), both configs and every
 * tensor_meta: a known dtype, strided layout, concrete sizes and strides
 * (no symbols), and a view that lies inside its storage's bytes
 * (overflow-checked). */
#ifndef PORTA_IO_PT2_ARCHIVE_H
#define PORTA_IO_PT2_ARCHIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "io/json.h"
#include "porta.h"

/* torch/_export/serde/schema.py SCHEMA_VERSION of PyTorch 2.13: (8, 20). */
#define PT2_SCHEMA_MAJOR 8
#define PT2_SCHEMA_MINOR 20
/* torch/export/pt2_archive/constants.py ARCHIVE_VERSION_VALUE. */
#define PT2_ARCHIVE_VERSION 0

typedef struct pt2_archive pt2_archive;

/* Opens and validates the archive at `path` (mapped, not read) and the
 * program called `model` in it; NULL picks the only program (an error
 * naming them when there are several). */
porta_status *pt2_open(const char *path, const char *model, pt2_archive **out);
/* The same over `size` bytes in memory (copied). */
porta_status *pt2_parse(const void *data, size_t size, const char *model, pt2_archive **out);
/* Tensors taken from the archive stay valid after this. */
void pt2_close(pt2_archive *archive);

/* The program's name ("model") and its serialized ExportedProgram: the
 * root object of models/<model>.json, with "graph_module",
 * "schema_version", "range_constraints", ... Valid until close. */
const char *pt2_model_name(const pt2_archive *archive);
const json_value *pt2_program(const pt2_archive *archive);
/* The schema version the program was written with. */
void pt2_schema_version(const pt2_archive *archive, int64_t *major, int64_t *minor);

typedef enum pt2_tensor_kind {
    PT2_WEIGHT,   /* the state dict: parameters and buffers */
    PT2_CONSTANT, /* lifted tensor constants */
} pt2_tensor_kind;

typedef struct pt2_tensor_info {
    const char *name;  /* the fully qualified name: "lin.weight" */
    pt2_tensor_kind kind;
    bool is_param;
    bool requires_grad;
    /* Only pickled in the archive (a tensor subclass or a custom object):
     * pt2_tensor_get refuses it. dtype/rank/sizes are then unset. */
    bool pickled;
    const char *entry; /* the storage's entry, "<root>/data/weights/weight_0" */
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    int64_t strides[PORTA_MAX_RANK]; /* elements, non-negative */
    int64_t storage_offset;          /* elements */
    uint64_t storage_bytes;          /* the entry's size */
} pt2_tensor_info;

/* Weights first, then constants, each in their config's order. */
int pt2_tensor_count(const pt2_archive *archive);
const pt2_tensor_info *pt2_tensor_at(const pt2_archive *archive, int index);
/* The tensor called `name`, or NULL. */
const pt2_tensor_info *pt2_tensor_find(const pt2_archive *archive, const char *name);

/* The tensor `name` on `device`, with its sizes, strides and offset: on a
 * device whose memory is host memory a view of the archive without a copy
 * when the storage is aligned to the element size, else a copy of the
 * storage. BOOL elements are checked to be 0 or 1. (An empty storage under
 * a tensor with elements, which PyTorch's loader would fill with zeros, is
 * an archive exported without its data: rejected when opened.) */
porta_status *pt2_tensor_get(pt2_archive *archive, const char *name, porta_device *device,
                             porta_tensor **out);

#endif
