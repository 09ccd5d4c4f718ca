/* Validation of a ZIP archive's structure, shared by the archive handle
 * (zip.c): the end records, the central directory, local headers, data
 * descriptors, names, coverage of the file and CRC-32s. */
#ifndef PORTA_IO_ZIP_DIRECTORY_H
#define PORTA_IO_ZIP_DIRECTORY_H

#include "io/zip.h"

typedef struct zip_directory {
    zip_entry *entries;       /* central directory order */
    size_t count;
    const zip_entry **sorted; /* by name, for lookups */
    char *names;              /* the entries' NUL-terminated names */
} zip_directory;

/* Checks the `size` bytes at `bytes` as a whole archive and fills *out,
 * whose entries point into `bytes`. */
porta_status *zip_directory_read(unsigned char *bytes, size_t size, zip_directory *out);
void zip_directory_free(zip_directory *directory);

#endif
