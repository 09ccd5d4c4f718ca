/* CRC-32 as ZIP uses it (reflected, polynomial 0xEDB88320), eight bytes at
 * a time ("slicing by 8"): archives are checked in full when opened, so
 * this runs over every byte of a model's weights. */
#include <pthread.h>
#include <string.h>

#include "io/zip.h"

static uint32_t tables[8][256];
static pthread_once_t tables_once = PTHREAD_ONCE_INIT;

static void build_tables(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        tables[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            tables[t][i] = (tables[t - 1][i] >> 8) ^ tables[0][tables[t - 1][i] & 0xFF];
}

uint32_t zip_crc32(uint32_t crc, const void *data, size_t size) {
    pthread_once(&tables_once, build_tables);
    const unsigned char *p = data;
    uint32_t c = ~crc;
    while (size >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4); /* the host is little-endian (checked in zip.c) */
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = tables[7][lo & 0xFF] ^ tables[6][(lo >> 8) & 0xFF] ^ tables[5][(lo >> 16) & 0xFF] ^
            tables[4][lo >> 24] ^ tables[3][hi & 0xFF] ^ tables[2][(hi >> 8) & 0xFF] ^
            tables[1][(hi >> 16) & 0xFF] ^ tables[0][hi >> 24];
        p += 8;
        size -= 8;
    }
    while (size--) c = tables[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return ~c;
}
