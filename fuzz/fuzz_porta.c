/* libFuzzer target for the .porta graph parser (src/model/program_parse.c):
 * any bytes given as a graph's JSON text are either rejected with a status
 * or give a graph that is freed without a leak (AddressSanitizer and
 * LeakSanitizer check each access and allocation). A graph accepted is also
 * estimated (src/model/estimate.c), which must hold for any graph too. */
#include <stdint.h>
#include <stdlib.h>

#include "model/estimate.h"
#include "model/program.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    model_program *graph = NULL;
    porta_status *status = model_program_parse((const char *)data, size, &graph);
    if (status) {
        /* Every error carries a message; a NULL one would be a bug. */
        if (!porta_status_message(status)) abort();
        porta_status_free(status);
        if (graph) abort(); /* nothing is handed out on error */
        return 0;
    }
    if (!graph) abort();
    porta_model_cost cost;
    status = model_estimate(graph, NULL, NULL, 0, &cost);
    if (status && !porta_status_message(status)) abort();
    porta_status_free(status);
    model_program_free(graph);
    return 0;
}
