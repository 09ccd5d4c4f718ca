/* libFuzzer target: any bytes given to the ZIP reader are either rejected
 * with a status or give an archive whose every entry lies inside the input,
 * holds the bytes its CRC-32 promises, and is found again by its name
 * (AddressSanitizer checks each access). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/zip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    zip_archive *archive = NULL;
    porta_status *status = zip_parse(data, size, &archive);
    if (status) {
        /* Every error carries a message; a NULL one would be a bug. */
        if (!porta_status_message(status)) abort();
        porta_status_free(status);
        return 0;
    }
    for (size_t i = 0; i < zip_count(archive); i++) {
        const zip_entry *e = zip_entry_at(archive, i);
        if (e->data_offset > size || e->size > size - e->data_offset) abort();
        if (memcmp(e->data, data + e->data_offset, (size_t)e->size)) abort();
        if (zip_crc32(0, e->data, (size_t)e->size) != e->crc32) abort();
        if (strlen(e->name) != e->name_length || !e->name_length) abort();
        if (strstr(e->name, "..") && (strstr(e->name, "/../") || !strncmp(e->name, "../", 3)))
            abort();
        if (zip_find(archive, e->name) != e) abort(); /* names are unique */
    }
    if (zip_entry_at(archive, zip_count(archive))) abort();
    zip_close(archive);
    return 0;
}
