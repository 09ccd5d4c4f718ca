/* A strict reader of ZIP archives as PyTorch writes them (torch.save,
 * torch.export.save): every entry stored uncompressed, with or without a
 * data descriptor, ZIP64 records where sizes or offsets need them.
 *
 * The whole archive is checked when it is opened, before any entry is
 * handed out: the end-of-central-directory records (and the ZIP64 ones),
 * every central directory entry, each entry's local header against its
 * central entry, names (valid UTF-8, relative, no empty, "." or ".."
 * component, no backslash or NUL, no duplicates), every size and offset
 * (overflow-checked and inside the file), that the entries, the central
 * directory and the end records cover the file exactly once (no overlap,
 * no unaccounted byte), and each entry's CRC-32. Compressed or encrypted
 * entries are rejected. Entries are then (pointer, size) views of the file. */
#ifndef PORTA_IO_ZIP_H
#define PORTA_IO_ZIP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

typedef struct zip_archive zip_archive;

typedef struct zip_entry {
    const char *name;     /* NUL-terminated, no NUL inside */
    size_t name_length;
    unsigned char *data;  /* the entry's bytes inside the archive's memory */
    uint64_t size;
    uint64_t data_offset; /* from the start of the file */
    uint32_t crc32;
} zip_entry;

/* Maps the file privately (writes to the views never reach the file) and
 * validates it. */
porta_status *zip_open(const char *path, zip_archive **out);
/* Validates `size` bytes held in memory; they are copied. */
porta_status *zip_parse(const void *data, size_t size, zip_archive **out);

/* The archive is reference-counted so that views of it (tensors over its
 * mapping) can outlive the handle: zip_close drops the caller's reference,
 * zip_retain/zip_release are for the holders of views. */
void zip_close(zip_archive *archive);
void zip_retain(zip_archive *archive);
void zip_release(void *archive); /* a void * for rt_buffer_wrap_host */

/* The entries, in the order of the central directory. */
size_t zip_count(const zip_archive *archive);
const zip_entry *zip_entry_at(const zip_archive *archive, size_t index);
/* The entry called `name`, or NULL. */
const zip_entry *zip_find(const zip_archive *archive, const char *name);

/* Writing: stored entries laid out as PyTorch's writer does, for tests and
 * fuzz targets that build archives (valid ones, then damaged on purpose). */
typedef struct zip_write_entry {
    const char *name; /* written as given, unchecked */
    const void *data;
    size_t size;
} zip_write_entry;

typedef struct zip_write_options {
    bool descriptor;   /* CRC and sizes in a data descriptor (PyTorch), else in the local header */
    bool zip64_end;    /* ZIP64 end records before the end record (PyTorch) */
    bool zip64_entries; /* every entry's sizes and offset in ZIP64 fields */
    unsigned alignment; /* data aligned to this many bytes by padding extra fields (PyTorch: 64); 0 or 1: none */
} zip_write_options;

/* The archive in a new allocation of *size bytes (free it with free()). */
porta_status *zip_write_memory(const zip_write_entry *entries, size_t count,
                               const zip_write_options *options, unsigned char **out,
                               size_t *size);

/* The CRC-32 of ZIP (reflected polynomial 0xEDB88320), continuing from
 * `crc` (0 to start). */
uint32_t zip_crc32(uint32_t crc, const void *data, size_t size);

#endif
