/* Choosing a device by measurement (torch_porta.select_device, "porta:auto").
 *
 * Measurements are stored in the cache directory's select/measurements.json
 * ($PORTA_CACHE_DIR, see runtime/kernel_cache.h), keyed by the device
 * ("backend|name|porta VERSION": a new Porta may change speed) and then by
 * workload. A device without a record for the standard workload is measured
 * once, here, and the record kept; comparisons (porta compare,
 * torch_porta.compare) store theirs under their own workload name. */
#ifndef PORTA_REPORT_SELECT_H
#define PORTA_REPORT_SELECT_H

#include <stdbool.h>

#include "porta.h"
#include "report.h" /* beside this file: also found from outside src/ */

/* The standard workload's name in the store. */
#define PORTA_SELECT_STANDARD "standard: MLP 256-512-10 (tanh) forward, batch 64"

/* The visible device best for `objective` ("throughput": most samples/s;
 * "latency": lowest median step; "cost": least cost per million samples
 * under the price file at prices_path; "energy": fewest joules per sample,
 * among devices with a reading) by the records of `workload` (NULL: the
 * standard one, measured where missing when `measure`). */
porta_status *porta_select_device(const char *objective, const char *workload,
                                  const char *prices_path, bool measure, int *index);

/* Stores every device of a comparison that ran under its workload. */
porta_status *porta_select_record(const porta_report *report);

#endif
