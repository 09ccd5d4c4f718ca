#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct porta_status {
    porta_code code;
    bool is_static;
    char *message;
};

/* Returned when there is no memory even for the status; never freed. */
static porta_status out_of_memory_status = {
    PORTA_ERR_OUT_OF_MEMORY, true, "out of memory while reporting an error"};

static char *vformat(const char *fmt, va_list args) {
    va_list copy;
    va_copy(copy, args);
    int len = vsnprintf(NULL, 0, fmt, copy);
    va_end(copy);
    if (len < 0) return NULL;
    char *text = malloc((size_t)len + 1);
    if (!text) return NULL;
    vsnprintf(text, (size_t)len + 1, fmt, args);
    return text;
}

porta_status *porta_error(porta_code code, const char *fmt, ...) {
    porta_status *status = malloc(sizeof *status);
    if (!status) return &out_of_memory_status;
    va_list args;
    va_start(args, fmt);
    status->message = vformat(fmt, args);
    va_end(args);
    if (!status->message) {
        free(status);
        return &out_of_memory_status;
    }
    status->code = code;
    status->is_static = false;
    return status;
}

porta_status *porta_error_context(porta_status *status, const char *fmt, ...) {
    if (!status || status->is_static) return status;
    va_list args;
    va_start(args, fmt);
    char *prefix = vformat(fmt, args);
    va_end(args);
    if (!prefix) return status;
    size_t len = strlen(prefix) + 2 + strlen(status->message) + 1;
    char *joined = malloc(len);
    if (joined) {
        snprintf(joined, len, "%s: %s", prefix, status->message);
        free(status->message);
        status->message = joined;
    }
    free(prefix);
    return status;
}

porta_code porta_status_code(const porta_status *status) {
    return status ? status->code : PORTA_OK;
}

const char *porta_status_message(const porta_status *status) {
    return status ? status->message : "ok";
}

void porta_status_free(porta_status *status) {
    if (!status || status->is_static) return;
    free(status->message);
    free(status);
}

const char *porta_code_name(porta_code code) {
    switch (code) {
    case PORTA_OK: return "ok";
    case PORTA_ERR_INVALID_ARGUMENT: return "invalid argument";
    case PORTA_ERR_SHAPE: return "shape mismatch";
    case PORTA_ERR_DTYPE: return "dtype mismatch";
    case PORTA_ERR_OUT_OF_RANGE: return "out of range";
    case PORTA_ERR_OUT_OF_MEMORY: return "out of memory";
    case PORTA_ERR_UNSUPPORTED: return "unsupported";
    case PORTA_ERR_UNAVAILABLE: return "unavailable";
    case PORTA_ERR_DEVICE: return "device mismatch";
    case PORTA_ERR_IO: return "i/o error";
    case PORTA_ERR_INTERNAL: return "internal error";
    case PORTA_ERR_DEVICE_LOST: return "device lost";
    }
    return "unknown error";
}

const char *core_format_shape(char *buf, size_t cap, int rank, const int64_t *sizes) {
    size_t used = 0;
    used += (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < rank && used < cap; i++)
        used += (size_t)snprintf(buf + used, cap - used, i ? ", %lld" : "%lld",
                                 (long long)sizes[i]);
    if (used < cap) snprintf(buf + used, cap - used, "]");
    return buf;
}
