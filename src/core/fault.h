/* Fault injection: failures a test cannot cause by hand (a device out of
 * memory, a kernel build that fails, a driver call that returns an error
 * mid-run, a disk that fills up during a write), on demand, so that their
 * error paths are exercised. Set by PORTA_FAULTS (read once, when the
 * first event is counted) or porta_set_faults(); docs/faults.md has the
 * syntax. Off, a check costs one atomic load. */
#ifndef PORTA_CORE_FAULT_H
#define PORTA_CORE_FAULT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "porta.h"

typedef enum core_fault_kind {
    CORE_FAULT_ALLOC,  /* a device buffer's allocation */
    CORE_FAULT_BUILD,  /* a kernel build: the CPU's C compiler, OpenCL's program build */
    CORE_FAULT_DRIVER, /* a launch, copy or sync the backend asks of its device */
    CORE_FAULT_WRITE,  /* one write() or fwrite() of a file Porta writes */
    CORE_FAULT_DEVICE_LOST, /* an allocation or launch on one device, which stays lost */
    CORE_FAULT_KINDS
} core_fault_kind;

/* Counts one event of `kind`; true when the rules in force say it fails. */
bool core_fault_hit(core_fault_kind kind);

/* Counts one event of `kind`: NULL when it goes ahead, else an error with
 * `code` whose message is the printf-formatted failing action followed by
 * the rule that failed it. Hooks call it through CORE_FAULT_CHECK. */
porta_status *core_fault_check(core_fault_kind kind, porta_code code, const char *fmt, ...)
    PORTA_PRINTF(3, 4);

/* True until PORTA_FAULTS has been read, then while any rule is in force.
 * The hooks sit on hot paths (every kernel launch and allocation), so
 * CORE_FAULT_CHECK tests it inline first: without rules a check is one
 * relaxed load, with no call and no evaluation of the message's
 * arguments. */
extern atomic_bool core_fault_may_hit;
#define CORE_FAULT_CHECK(kind, code, ...)                                             \
    (atomic_load_explicit(&core_fault_may_hit, memory_order_relaxed)                 \
         ? core_fault_check((kind), (code), __VA_ARGS__)                             \
         : NULL)

/* Counts one allocation or launch on device `index` (porta:index) for a
 * device_lost rule: from the rule's Nth event on that device, every one
 * fails with PORTA_ERR_DEVICE_LOST, as a device that has gone away keeps
 * failing. `action` names what failed. Hooks call it through
 * CORE_FAULT_DEVICE_CHECK. */
porta_status *core_fault_device_check(int index, const char *action);
#define CORE_FAULT_DEVICE_CHECK(index, action)                                        \
    (atomic_load_explicit(&core_fault_may_hit, memory_order_relaxed)                 \
         ? core_fault_device_check((index), (action))                                \
         : NULL)

/* write(2) and fwrite(3) (of `bytes` single bytes) as one CORE_FAULT_WRITE
 * event each: a failing one writes half the bytes, as a disk that fills up
 * part way does, and reports ENOSPC (write: -1; fwrite: the short count). */
ssize_t core_fault_write(int fd, const void *data, size_t bytes);
size_t core_fault_fwrite(const void *data, size_t bytes, FILE *file);

#endif
