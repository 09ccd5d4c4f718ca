/* The profiler: off by default and free then, start/stop errors, and the
 * file it writes checked against Chrome's trace event format (fields and
 * types per phase, nesting per thread row, a named track per device) for
 * eager and fused work, kernel builds, syncs, copies between devices and
 * several issuing threads. The checker itself is shown to reject broken
 * traces. */
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/json.h"
#include "runtime/profiler.h"
#include "test.h"

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* ---- the checker ---- */

typedef struct span {
    int pid, tid;
    double ts, end;
} span;

static int by_track_then_time(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->pid != y->pid) return x->pid < y->pid ? -1 : 1;
    if (x->tid != y->tid) return x->tid < y->tid ? -1 : 1;
    if (x->ts != y->ts) return x->ts < y->ts ? -1 : 1;
    return x->end > y->end ? -1 : x->end < y->end; /* the outer one first */
}

static bool is_int(const json_value *v) {
    return v && v->type == JSON_NUMBER && v->as.number.is_integer;
}

/* What a trace of the summary counts. */
typedef struct trace_summary {
    int events;
    int per_category[PROF_CATEGORY_COUNT];
    int named_pids[16]; /* pids with a process_name, in order */
    int named_count;
    int used_pids[16];
    int used_count;
    int tids[16];
    int tid_count;
} trace_summary;

static void add_unique(int *list, int *count, int value) {
    for (int i = 0; i < *count; i++)
        if (list[i] == value) return;
    if (*count < 16) list[(*count)++] = value;
}

/* Checks the document against the trace event format; NULL when it
 * conforms, else what is wrong (static text or `why`). */
static const char *check_trace(const char *text, trace_summary *sum, char *why, size_t cap) {
    memset(sum, 0, sizeof *sum);
    json_document *doc = NULL;
    porta_status *status = json_parse(text, strlen(text), 16, &doc);
    if (status) {
        snprintf(why, cap, "not JSON: %s", porta_status_message(status));
        porta_status_free(status);
        return why;
    }
    const char *problem = NULL;
    const json_value *events = json_object_get(json_document_root(doc), "traceEvents");
    span *spans = NULL;
    int span_count = 0;
    if (!events || events->type != JSON_ARRAY) {
        problem = "no traceEvents array";
        goto done;
    }
    spans = calloc(events->as.array.count + 1, sizeof *spans);
    for (size_t i = 0; i < events->as.array.count && !problem; i++) {
        const json_value *e = events->as.array.items[i];
        const json_value *name = json_object_get(e, "name"), *ph = json_object_get(e, "ph");
        const json_value *pid = json_object_get(e, "pid"), *tid = json_object_get(e, "tid");
        const json_value *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
        snprintf(why, cap, "event %zu: ", i);
        size_t at = strlen(why);
        if (e->type != JSON_OBJECT) snprintf(why + at, cap - at, "not an object");
        else if (!name || name->type != JSON_STRING)
            snprintf(why + at, cap - at, "name is not a string");
        else if (!ph || ph->type != JSON_STRING) snprintf(why + at, cap - at, "ph is not a string");
        else if (!is_int(pid) || !is_int(tid))
            snprintf(why + at, cap - at, "pid/tid are not integers");
        else if (!strcmp(ph->as.string.chars, "M")) {
            const json_value *args = json_object_get(e, "args");
            const json_value *label = args ? json_object_get(args, "name") : NULL;
            if (!strcmp(name->as.string.chars, "process_name")) {
                if (!label || label->type != JSON_STRING || !label->as.string.length)
                    snprintf(why + at, cap - at, "process_name without args.name");
                else
                    add_unique(sum->named_pids, &sum->named_count, (int)pid->as.number.integer);
            }
            continue;
        } else if (strcmp(ph->as.string.chars, "X"))
            snprintf(why + at, cap - at, "phase \"%s\": the profiler writes X and M only",
                     ph->as.string.chars);
        else if (!ts || ts->type != JSON_NUMBER || ts->as.number.value < 0)
            snprintf(why + at, cap - at, "ts is not a number >= 0");
        else if (!dur || dur->type != JSON_NUMBER || dur->as.number.value < 0)
            snprintf(why + at, cap - at, "an X event without dur >= 0");
        else {
            const json_value *cat = json_object_get(e, "cat");
            int category = -1;
            for (int c = 0; cat && cat->type == JSON_STRING && c < PROF_CATEGORY_COUNT; c++)
                if (!strcmp(cat->as.string.chars, prof_category_name(c))) category = c;
            if (category < 0) {
                snprintf(why + at, cap - at, "cat is not one of the profiler's categories");
            } else {
                sum->events++;
                sum->per_category[category]++;
                add_unique(sum->used_pids, &sum->used_count, (int)pid->as.number.integer);
                add_unique(sum->tids, &sum->tid_count, (int)tid->as.number.integer);
                spans[span_count++] = (span){(int)pid->as.number.integer,
                                             (int)tid->as.number.integer, ts->as.number.value,
                                             ts->as.number.value + dur->as.number.value};
                continue;
            }
        }
        problem = why;
    }
    if (problem) goto done;
    /* The events of one row nest like calls: each starts after and ends
     * before the one enclosing it, or starts after it ended. */
    qsort(spans, (size_t)span_count, sizeof *spans, by_track_then_time);
    span *stack[64];
    int depth = 0;
    for (int i = 0; i < span_count && !problem; i++) {
        span *s = &spans[i];
        if (i && (s->pid != spans[i - 1].pid || s->tid != spans[i - 1].tid)) depth = 0;
        while (depth && stack[depth - 1]->end <= s->ts) depth--;
        if (depth && s->end > stack[depth - 1]->end + 1e-9) {
            snprintf(why, cap, "pid %d tid %d: an event at %.3f overlaps the one at %.3f "
                     "without nesting in it", s->pid, s->tid, s->ts, stack[depth - 1]->ts);
            problem = why;
        }
        if (depth < 64) stack[depth++] = s;
    }
    for (int i = 0; i < sum->used_count && !problem; i++) {
        bool named = false;
        for (int j = 0; j < sum->named_count; j++) named |= sum->named_pids[j] == sum->used_pids[i];
        if (!named) {
            snprintf(why, cap, "pid %d has events but no process_name", sum->used_pids[i]);
            problem = why;
        }
    }
done:
    free(spans);
    json_document_free(doc);
    return problem;
}

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    if (text && fread(text, 1, (size_t)n, f) != (size_t)n) {
        free(text);
        text = NULL;
    }
    if (text) text[n] = '\0';
    fclose(f);
    return text;
}

static const char *trace_path(void) {
    static char path[256];
    const char *dir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(path, sizeof path, "%s/porta_trace_%d.json", dir, (int)getpid());
    return path;
}

/* Stops the profiler into a file and checks it; the text (free it) or
 * NULL with the failure recorded. */
static char *stop_and_check(trace_summary *sum) {
    const char *path = trace_path();
    porta_status *status = porta_profiler_stop(path);
    if (status) {
        test_fail(__FILE__, __LINE__, "profiler_stop: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    char *text = read_text(path);
    unlink(path);
    if (!text) {
        test_fail(__FILE__, __LINE__, "cannot read %s back", path);
        return NULL;
    }
    char why[512];
    const char *problem = check_trace(text, sum, why, sizeof why);
    CHECK_MSG(!problem, "the trace does not conform: %s", problem);
    return text;
}

/* ---- the checker rejects what it must ---- */

TEST(test_profiler_checker_rejects_broken_traces) {
    static const char *const broken[] = {
        "{\"events\":[]}",
        "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"pid\":1,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":-2,\"pid\":1,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":\"1\",\"dur\":1,\"pid\":1,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1.5,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        /* a track without its name */
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,"
        "\"cat\":\"kernel\"}]}",
        /* two events of one row that overlap without nesting */
        "{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
        "\"args\":{\"name\":\"d\"}},"
        "{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":5,\"pid\":1,\"tid\":1,\"cat\":\"kernel\"},"
        "{\"name\":\"b\",\"ph\":\"X\",\"ts\":3,\"dur\":5,\"pid\":1,\"tid\":1,\"cat\":\"kernel\"}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"Q\",\"ts\":1,\"pid\":1,\"tid\":1}]}",
        "{\"traceEvents\":[{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":1,\"pid\":1,\"tid\":1,"
        "\"cat\":\"gpu\"}]",
    };
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        trace_summary sum;
        char why[512];
        CHECK_MSG(check_trace(broken[i], &sum, why, sizeof why) != NULL,
                  "broken trace %zu was accepted", i);
    }
    const char *good =
        "{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,"
        "\"args\":{\"name\":\"d\"}},"
        "{\"name\":\"a\",\"ph\":\"X\",\"ts\":1,\"dur\":5,\"pid\":1,\"tid\":1,\"cat\":\"kernel\"},"
        "{\"name\":\"b\",\"ph\":\"X\",\"ts\":2,\"dur\":1,\"pid\":1,\"tid\":1,\"cat\":\"compile\"},"
        "{\"name\":\"c\",\"ph\":\"X\",\"ts\":3,\"dur\":5,\"pid\":1,\"tid\":2,\"cat\":\"kernel\"}]}";
    trace_summary sum;
    char why[512];
    const char *problem = check_trace(good, &sum, why, sizeof why);
    CHECK_MSG(!problem, "a good trace was rejected: %s", problem);
    CHECK(sum.events == 3 && sum.tid_count == 2);
}

/* ---- the switch ---- */

TEST(test_profiler_off_by_default_and_start_stop_errors) {
    CHECK(prof_begin() == 0);
    CHECK(porta_profiler_begin() == 0);
    CHECK_ERR(porta_profiler_stop(NULL), PORTA_ERR_INVALID_ARGUMENT, "stopped");
    CHECK_OK(porta_profiler_start());
    CHECK(prof_begin() != 0);
    CHECK_ERR(porta_profiler_start(), PORTA_ERR_INVALID_ARGUMENT, "running");
    CHECK_ERR(porta_profiler_record("gpu", -1, "x", porta_profiler_begin()),
              PORTA_ERR_INVALID_ARGUMENT, "\"gpu\"");
    CHECK_ERR(porta_profiler_record("kernel", 999, "x", porta_profiler_begin()),
              PORTA_ERR_OUT_OF_RANGE, "999");
    CHECK(prof_event_count() == 0);
    CHECK_OK(porta_profiler_stop(NULL)); /* discards */
    CHECK(prof_begin() == 0);
    /* nothing is recorded while stopped, nor an event begun before the
     * session that ends in it */
    porta_tensor *a = NULL, *b = NULL;
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 1, SHAPE(8), 1.0, &a));
    CHECK_OK(porta_binary(PORTA_ADD, a, a, &b));
    CHECK_OK(porta_profiler_start());
    uint64_t old_begin = prof_begin();
    CHECK_OK(porta_profiler_stop(NULL));
    CHECK_OK(porta_profiler_start());
    CHECK(prof_event_count() == 0);
    prof_end(PROF_KERNEL, test_cpu(), "stale", NULL, -1, old_begin);
    CHECK(prof_event_count() == 0);
    prof_end(PROF_KERNEL, test_cpu(), "fresh", NULL, -1, prof_begin());
    CHECK(prof_event_count() == 1);
    CHECK_OK(porta_profiler_stop(NULL));
    porta_tensor_release(a);
    porta_tensor_release(b);
}

TEST(test_profiler_unwritable_path_stops_and_names_it) {
    CHECK_OK(porta_profiler_start());
    CHECK_OK(porta_profiler_record("fallback", -1, "aten::thing", porta_profiler_begin()));
    CHECK_ERR(porta_profiler_stop("/nonexistent-dir/trace.json"), PORTA_ERR_IO,
              "/nonexistent-dir/trace.json");
    CHECK(prof_begin() == 0);
    CHECK_ERR(porta_profiler_stop(NULL), PORTA_ERR_INVALID_ARGUMENT, "stopped");
}

/* ---- what a session records ---- */

static bool has_event(const char *text, const char *name, const char *cat) {
    char needle[160];
    snprintf(needle, sizeof needle, "{\"name\":\"%s\",\"cat\":\"%s\"", name, cat);
    return strstr(text, needle) != NULL;
}

TEST(test_profiler_eager_fused_compile_and_sync_events) {
    test_cache_begin(); /* the fused kernel is built, not found */
    porta_tensor *a = NULL, *b = NULL, *c = NULL, *d = NULL, *e = NULL;
    CHECK_OK(porta_profiler_start());
    CHECK_OK(porta_tensor_full(test_cpu(), PORTA_F32, 2, SHAPE(64, 33), 1.5, &a));
    CHECK_OK(porta_binary(PORTA_MUL, a, a, &b));
    CHECK_OK(porta_set_fusion(true));
    porta_status *status = porta_binary(PORTA_ADD, a, b, &c);
    if (!status) status = porta_unary(PORTA_EXP, c, &d);
    if (!status) status = porta_binary(PORTA_MUL, d, a, &e);
    if (!status) status = porta_device_synchronize(test_cpu());
    porta_status *off = porta_set_fusion(false);
    CHECK_OK(status);
    CHECK_OK(off);
    CHECK_OK(porta_profiler_record("fallback", -1, "aten::something", porta_profiler_begin()));
    trace_summary sum;
    char *text = stop_and_check(&sum);
    if (text) {
        CHECK_MSG(has_event(text, "binary.mul", "kernel"),
                  "no eager kernel event for mul:\n%.2000s", text);
        CHECK_MSG(strstr(text, "\"detail\":\"fused kernel\""), "no fused kernel event");
        CHECK_MSG(strstr(text, "\"cat\":\"compile\",\"ph\":\"X\"") &&
                      strstr(text, "\"detail\":\"compiled\""),
                  "no compile event for the fused kernel");
        CHECK(has_event(text, "flush", "sync"));
        CHECK(has_event(text, "synchronize", "sync"));
        CHECK(has_event(text, "aten::something", "fallback"));
        CHECK(sum.per_category[PROF_KERNEL] >= 2 && sum.per_category[PROF_SYNC] >= 2);
        /* the CPU's track (pid porta:0 + 1) and the host's (pid 0) are named */
        porta_device_info info;
        CHECK_OK(porta_device_info_get(test_cpu(), &info));
        bool cpu = false, host = false;
        for (int i = 0; i < sum.named_count; i++) {
            cpu |= sum.named_pids[i] == info.index + 1;
            host |= sum.named_pids[i] == 0;
        }
        CHECK(cpu && host);
        CHECK(strstr(text, "\"args\":{\"name\":\"host\"}") != NULL);
    }
    free(text);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(c);
    porta_tensor_release(d);
    porta_tensor_release(e);
    test_cache_end();
}

typedef struct worker_arg {
    porta_status *status;
} worker_arg;

static void *worker(void *arg) {
    worker_arg *w = arg;
    porta_tensor *a = NULL, *b = NULL;
    w->status = porta_tensor_full(test_cpu(), PORTA_F32, 1, SHAPE(100000), 2.0, &a);
    for (int i = 0; i < 20 && !w->status; i++) {
        w->status = porta_unary(PORTA_SQRT, a, &b);
        porta_tensor_release(b);
        b = NULL;
    }
    porta_tensor_release(a);
    return NULL;
}

TEST(test_profiler_rows_per_issuing_thread) {
    CHECK_OK(porta_profiler_start());
    pthread_t threads[3];
    worker_arg args[3] = {{0}};
    for (int i = 0; i < 3; i++) pthread_create(&threads[i], NULL, worker, &args[i]);
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    for (int i = 0; i < 3; i++) CHECK_OK(args[i].status);
    trace_summary sum;
    char *text = stop_and_check(&sum);
    if (text) {
        CHECK_MSG(sum.per_category[PROF_KERNEL] >= 60, "%d kernel events, expected 60",
                  sum.per_category[PROF_KERNEL]);
        CHECK_MSG(sum.tid_count >= 3, "%d rows for 3 issuing threads", sum.tid_count);
    }
    free(text);
}

/* ---- copies between devices ---- */

static bool opencl_expected(void) {
    if (getenv("PORTA_REQUIRE_OPENCL")) return true;
    void *loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) return false;
    dlclose(loader);
    const char *dir_name = getenv("OCL_ICD_VENDORS");
    DIR *dir = opendir(dir_name && dir_name[0] ? dir_name : "/etc/OpenCL/vendors");
    bool found = false;
    for (struct dirent *e; dir && !found && (e = readdir(dir));)
        found = strlen(e->d_name) > 4 && !strcmp(e->d_name + strlen(e->d_name) - 4, ".icd");
    if (dir) closedir(dir);
    return found;
}

TEST(test_profiler_copies_and_kernels_on_each_device_track) {
    porta_device *other = NULL;
    for (int i = 0; i < porta_device_count() && !other; i++) {
        porta_device *d;
        porta_device_info info;
        if (!porta_device_get(i, &d) && !porta_device_info_get(d, &info) &&
            !strcmp(info.backend, "opencl"))
            other = d;
    }
    if (!other) {
        CHECK_MSG(!opencl_expected(), "an OpenCL driver is installed but no OpenCL device found");
        fprintf(stderr, "test_profiler_copies_and_kernels_on_each_device_track: no second device; "
                        "the copy is checked on the CPU's track only\n");
    }
    test_cache_begin();
    porta_tensor *a = NULL, *on_other = NULL, *squared = NULL, *back = NULL;
    CHECK_OK(porta_profiler_start());
    porta_status *status = porta_tensor_full(test_cpu(), PORTA_F32, 1, SHAPE(1000), 3.0, &a);
    if (!status && other) status = porta_tensor_empty(other, PORTA_F32, 1, SHAPE(1000), &on_other);
    if (!status && other) status = porta_copy(a, on_other);
    if (!status && other) status = porta_binary(PORTA_MUL, on_other, on_other, &squared);
    if (!status && other) status = porta_tensor_empty(test_cpu(), PORTA_F32, 1, SHAPE(1000), &back);
    if (!status && other) status = porta_copy(squared, back);
    CHECK_OK(status);
    trace_summary sum;
    char *text = stop_and_check(&sum);
    if (text && other) {
        int other_pid = 0;
        porta_device_info info;
        CHECK_OK(porta_device_info_get(other, &info));
        other_pid = info.index + 1;
        bool named = false, used = false;
        for (int i = 0; i < sum.named_count; i++) named |= sum.named_pids[i] == other_pid;
        for (int i = 0; i < sum.used_count; i++) used |= sum.used_pids[i] == other_pid;
        CHECK(named && used);
        CHECK(sum.per_category[PROF_COPY] >= 2);
        CHECK(has_event(text, "copy between devices", "copy"));
        CHECK(has_event(text, "write from host", "copy"));
        CHECK(has_event(text, "read to host", "copy"));
    }
    free(text);
    porta_tensor_release(a);
    porta_tensor_release(on_other);
    porta_tensor_release(squared);
    porta_tensor_release(back);
    test_cache_end();
}
