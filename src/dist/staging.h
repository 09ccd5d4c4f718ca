/* Host memory for a tensor's part in a call: the tensor's own buffer when
 * MPI can use it in place, else a staging copy (tensor_collectives.c). */
#ifndef PORTA_DIST_STAGING_H
#define PORTA_DIST_STAGING_H

#include "dist/work.h"

/* On the issuing thread: host memory holding t's elements (t's pending work
 * is run first); `read` copies them there when staged, `write_back` marks
 * memory whose result porta_dist_work_wait puts into t. Retains t. */
porta_status *dist_stage(porta_tensor *t, bool read, bool write_back, dist_staged *out);
/* On the waiting thread: puts a staged result back into its tensor. */
porta_status *dist_staged_write_back(dist_staged *s);
/* Frees the staging memory and lets go of the tensor. */
void dist_staged_release(dist_staged *s);

#endif
