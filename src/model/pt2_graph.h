/* A .pt2 archive's program as a .porta graph (JSON text), and the names of
 * its weights in the archive. */
#ifndef PORTA_MODEL_PT2_GRAPH_H
#define PORTA_MODEL_PT2_GRAPH_H

#include "io/pt2_archive.h"
#include "model/program.h"
#include "core/text.h"

/* The graph names each weight by its placeholder ("p_fc_weight"); the
 * archive by its fully qualified name ("fc.weight"). */
typedef struct pt2_weight_names {
    char **placeholders;
    char **fqns;
    int count;
} pt2_weight_names;

/* Appends the .porta graph to `out` and fills `weights` (free it with
 * pt2_weight_names_free, on error too). */
porta_status *pt2_graph_to_porta(const pt2_archive *archive, core_text *out,
                                 pt2_weight_names *weights);
void pt2_weight_names_free(pt2_weight_names *weights);

#endif
