/* The profiler's file: Chrome's trace event format, which chrome://tracing
 * and ui.perfetto.dev open. Every event is complete ("X": start and
 * duration in microseconds); each device is a process (pid porta:N + 1,
 * the host pid 0) named by a process_name metadata event, and each issuing
 * thread a row (tid). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/output_file.h"
#include "core/status.h"
#include "runtime/device.h"
#include "runtime/device_lookup.h"
#include "runtime/profiler.h"

static int pid_of(int device) { return device + 1; }

static void put_string(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

static void put_micros(FILE *f, uint64_t ns) {
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static void put_event(FILE *f, const prof_event *e) {
    fputs("{\"name\":", f);
    put_string(f, e->name);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":", prof_category_name(e->category));
    put_micros(f, e->start);
    fputs(",\"dur\":", f);
    put_micros(f, e->duration);
    fprintf(f, ",\"pid\":%d,\"tid\":%d,\"args\":{", pid_of(e->device), e->thread);
    const char *sep = "";
    if (e->detail[0]) {
        fputs("\"detail\":", f);
        put_string(f, e->detail);
        sep = ",";
    }
    if (e->bytes >= 0) fprintf(f, "%s\"bytes\":%" PRId64, sep, e->bytes);
    fputs("}}", f);
}

/* Names the track of `device` (-1: the host) and orders the tracks as the
 * devices are numbered, the host first. */
static void put_track_names(FILE *f, int device) {
    char label[320];
    porta_device *d = NULL;
    porta_status *status = device >= 0 ? rt_lookup_device(device, &d) : NULL;
    porta_status_free(status);
    if (d)
        snprintf(label, sizeof label, "porta:%d %s (%s)", device, d->info.backend,
                 d->info.name ? d->info.name : "");
    else if (device >= 0)
        snprintf(label, sizeof label, "porta:%d", device);
    else
        snprintf(label, sizeof label, "host");
    fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":",
            pid_of(device));
    put_string(f, label);
    fprintf(f, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
               "\"args\":{\"sort_index\":%d}}",
            pid_of(device), pid_of(device));
}

porta_status *prof_write_json(const char *path, const prof_event *events, int count,
                              uint64_t dropped) {
    core_output file;
    PORTA_TRY(core_output_open(path, "profiler: trace", &file));
    FILE *f;
    porta_status *opened = core_output_stream(&file, &f);
    if (opened) return core_output_close(&file, opened);
    fputs("{\"traceEvents\":[\n", f);
    /* A track for each device that has events, and for the host. */
    int devices = rt_lookup_device_count();
    bool *used = calloc((size_t)devices + 1, sizeof *used); /* [0]: the host */
    if (!used)
        return core_output_close(
            &file, porta_error(PORTA_ERR_OUT_OF_MEMORY, "profiler: no memory to write the trace"));
    for (int i = 0; i < count; i++)
        if (events[i].device < devices) used[events[i].device + 1] = true;
    bool first = true;
    for (int d = -1; d < devices; d++) {
        if (!used[d + 1]) continue;
        if (!first) fputs(",\n", f);
        put_track_names(f, d);
        first = false;
    }
    free(used);
    for (int i = 0; i < count; i++) {
        if (!first) fputs(",\n", f);
        put_event(f, &events[i]);
        first = false;
    }
    fprintf(f, "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"producer\":\"porta %s\","
               "\"events\":%d,\"dropped_events\":%" PRIu64 "}}\n",
            porta_version_string(), count, dropped);
    return core_output_close(&file, NULL);
}
