/* Energy readings from the platform's own counters: RAPL through Linux's
 * powercap for processors, NVML for NVIDIA GPUs. A device without such a
 * counter has no reading, and the reason says why; nothing here estimates.
 *
 * A sample is a snapshot of every counter of one source; the energy used
 * between two samples of the same source is porta_energy_joules(start, end),
 * which accounts for counters that wrapped around. */
#ifndef PORTA_ENERGY_H
#define PORTA_ENERGY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PORTA_ENERGY_MAX_COUNTERS 16
#define PORTA_ENERGY_REASON_CAP 256

typedef enum porta_energy_source {
    PORTA_ENERGY_NONE = 0,
    PORTA_ENERGY_RAPL, /* package domains of /sys/class/powercap, micro-joules */
    PORTA_ENERGY_NVML  /* one GPU's total energy, milli-joules */
} porta_energy_source;

typedef struct porta_energy_sample {
    porta_energy_source source;
    int count;                                  /* counters read */
    uint64_t value[PORTA_ENERGY_MAX_COUNTERS];  /* as the counter reads */
    uint64_t range[PORTA_ENERGY_MAX_COUNTERS];  /* where it wraps to 0; 0: never */
} porta_energy_sample;

/* Reads every RAPL package domain (intel-rapl:N, not its subdomains) under
 * $PORTA_POWERCAP_ROOT, else /sys/class/powercap. False, with the reason in
 * `why`, when there is none or one cannot be read (often: only root may read
 * energy_uj). */
PORTA_API bool porta_energy_read_rapl(porta_energy_sample *out, char *why, size_t cap);

/* Reads GPU `index`'s total energy through NVML (libnvidia-ml.so.1, or
 * $PORTA_NVML_LIBRARY), loaded at run time. False, with the reason, when
 * NVML or the counter is missing. */
PORTA_API bool porta_energy_read_nvml(int index, porta_energy_sample *out, char *why, size_t cap);

/* The counter that covers `device`: RAPL for the CPU backend and for OpenCL
 * devices that run on the host's processor (PoCL's CPU device: their names
 * carry the processor's model name), NVML for CUDA devices (by their order
 * among porta's CUDA devices). False with the reason for every other
 * device. */
PORTA_API bool porta_energy_read_device(const porta_device_info *device, porta_energy_sample *out,
                                        char *why, size_t cap);

/* What a reading of this source covers, for reports: RAPL counts the whole
 * processor package, shared by every device running on it and by every
 * other process. */
PORTA_API const char *porta_energy_source_note(porta_energy_source source);
PORTA_API const char *porta_energy_source_name(porta_energy_source source);

/* Joules used between two samples of the same source and counters; a
 * counter that reads less at the end wrapped once at its range. Negative
 * when the samples cannot be compared (different sources or counters, or a
 * counter that went backwards without a range). */
PORTA_API double porta_energy_joules(const porta_energy_sample *start,
                                     const porta_energy_sample *end);

#ifdef __cplusplus
}
#endif

#endif
