/* porta_file_write: the public face of core_output for the tools and
 * bindings that write a user-named file (reports, benchmark results). */
#include "core/output_file.h"
#include "porta_io.h"

porta_status *porta_file_write(const char *path, const void *data, size_t size) {
    if (!data && size)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "file_write: expected %zu bytes of data, got NULL", size);
    return core_output_file(path, "file", data, size);
}
