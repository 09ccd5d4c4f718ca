/*
 * porta_io.h - reading and writing tensors in files: safetensors.
 *
 * The conventions of porta.h apply: fallible calls return a porta_status
 * (NULL on success), handles are released by their *_close / *_release.
 *
 * safetensors (https://github.com/huggingface/safetensors, format only): an
 * 8-byte little-endian header length N, N bytes of JSON naming each tensor's
 * dtype, shape and [begin, end) byte range in the data section that follows,
 * and an optional "__metadata__" object of string values. Files are checked
 * in full before any tensor is handed out: the header at most 100,000,000
 * bytes and inside the file, valid UTF-8 JSON without duplicate keys, known
 * dtypes (BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64), sizes that match
 * product(shape) * dtype size without overflow, and ranges that are
 * contiguous and cover the data section exactly. A file that fails any
 * check is rejected with a message saying what was expected and what the
 * file holds; nothing in it is trusted before that.
 */
#ifndef PORTA_IO_H
#define PORTA_IO_H

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct porta_safetensors porta_safetensors;

/* Largest header accepted, as in the format's reference implementation. */
#define PORTA_SAFETENSORS_MAX_HEADER 100000000u

/* Opens and validates a file. The file is mapped, not read: tensors taken
 * from it on a CPU device are views of the mapping (copy-on-write, so
 * writing to them never changes the file). Replacing the file (as
 * porta_safetensors_save does, by rename) is safe while it is open;
 * truncating it in place is not, as with any mapped file. */
PORTA_API porta_status *porta_safetensors_open(const char *path, porta_safetensors **out);
/* Validates `size` bytes of a safetensors file held in memory; the bytes are
 * copied, so `data` may be freed once this returns. */
PORTA_API porta_status *porta_safetensors_parse(const void *data, size_t size,
                                                porta_safetensors **out);
/* Releases the handle. Tensors taken from it stay valid: each holds the
 * mapping until it is released. */
PORTA_API void porta_safetensors_close(porta_safetensors *file);

/* The tensors, in the order of their data in the file. */
PORTA_API int porta_safetensors_count(const porta_safetensors *file);
/* The name of tensor `index` (NULL when out of range); valid until close. */
PORTA_API const char *porta_safetensors_name(const porta_safetensors *file, int index);

typedef struct porta_safetensors_info {
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    uint64_t data_offset; /* from the start of the file */
    uint64_t bytes;
} porta_safetensors_info;
PORTA_API porta_status *porta_safetensors_info_get(const porta_safetensors *file,
                                                   const char *name,
                                                   porta_safetensors_info *out);

/* The tensor `name` as a contiguous tensor on `device`: on a device whose
 * memory is host memory (the CPU) a view of the file without a copy when its
 * data is aligned to its element size, otherwise a copy. BOOL tensors are
 * checked to hold only 0 and 1. */
PORTA_API porta_status *porta_safetensors_get(porta_safetensors *file, const char *name,
                                              porta_device *device, porta_tensor **out);

/* "__metadata__": string keys and values, in the file's order. Strings are
 * valid until close. */
PORTA_API int porta_safetensors_metadata_count(const porta_safetensors *file);
PORTA_API porta_status *porta_safetensors_metadata_at(const porta_safetensors *file, int index,
                                                      const char **key, const char **value);
/* The value for `key`, or NULL when the file has no such entry. */
PORTA_API const char *porta_safetensors_metadata_get(const porta_safetensors *file,
                                                     const char *key);

typedef struct porta_safetensors_entry {
    const char *name;
    const porta_tensor *tensor; /* any device, any strides */
} porta_safetensors_entry;

typedef struct porta_safetensors_pair {
    const char *key;
    const char *value;
} porta_safetensors_pair;

/* Writes tensors and metadata (may be NULL when metadata_count is 0) to
 * `path` as porta_file_write writes a file. Names must be valid UTF-8,
 * unique, and not "__metadata__". The data is ordered by element size,
 * largest first (the given order otherwise), so every tensor is aligned
 * for loading without a copy. */
PORTA_API porta_status *porta_safetensors_save(const char *path,
                                               const porta_safetensors_entry *tensors,
                                               int count,
                                               const porta_safetensors_pair *metadata,
                                               int metadata_count);

/* Writes `size` bytes as the file `path` names, through a temporary file in
 * the same directory renamed into place once complete, so readers never see
 * a partial file and a failure leaves the old one. A symbolic link is
 * followed: the file it leads to is replaced and the link stays. A path that
 * names anything but a regular file (a directory, a FIFO, a device node, a
 * socket) is refused with PORTA_ERR_IO and left as it is. */
PORTA_API porta_status *porta_file_write(const char *path, const void *data, size_t size);

#ifdef __cplusplus
}
#endif

#endif
