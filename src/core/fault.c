/* Fault injection (fault.h). A rule per kind of event: off, fail the Nth
 * event from when the rules were set (once: "alloc:3"), or fail each event
 * with a probability ("alloc:p0.01"), drawn from a generator seeded by
 * "seed:S". The Nth-event form gives tests a failure at a known place; the
 * probability form spreads failures over a long run (bench/soak.py). Both
 * are lock-free when checked, so hooks sit on hot paths. */
#include "core/fault.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"

enum { RULE_OFF, RULE_NTH, RULE_RATE };

typedef struct fault_rule {
    int mode;
    long long nth;      /* RULE_NTH: which event fails, from 1 */
    uint64_t threshold; /* RULE_RATE: a draw below it fails */
    int device;         /* device_lost: the index of the device that is lost */
    char text[40];      /* the rule as written, for messages */
} fault_rule;

static const char *const kind_names[CORE_FAULT_KINDS] = {"alloc", "build", "driver", "write",
                                                         "device_lost"};

/* The rules in force; `armed` says whether any is on (the checks' fast
 * path). Each kind's events are counted from when the rules were set. */
static atomic_bool armed;
atomic_bool core_fault_may_hit = true;
static atomic_int modes[CORE_FAULT_KINDS];
static atomic_llong events[CORE_FAULT_KINDS];
static atomic_ullong random_state;
static pthread_mutex_t rules_lock = PTHREAD_MUTEX_INITIALIZER;
static fault_rule rules[CORE_FAULT_KINDS]; /* guarded by rules_lock */

/* ---- parsing ---- */

static porta_status *bad_spec(const char *spec, const char *item, int length) {
    return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                       "faults: expected comma-separated KIND:N (fail the Nth event, N >= 1) or "
                       "KIND:pRATE (fail each event with probability 0 <= RATE <= 1) with KIND "
                       "one of alloc, build, driver, write, or device_lost:porta:D@N (device D "
                       "fails from its Nth allocation or launch on, N >= 1), and an optional "
                       "seed:S; got \"%.*s\" in \"%s\"",
                       length, item, spec);
}

/* Numbers start with a digit (or a point): no sign, no blank space. */
static bool starts_number(const char *s) { return (*s >= '0' && *s <= '9') || *s == '.'; }

/* One "name:value" item of `spec` into rules/seed. */
static porta_status *parse_item(const char *spec, const char *item, int length,
                                fault_rule *parsed, uint64_t *seed) {
    const char *colon = memchr(item, ':', (size_t)length);
    if (!colon || colon == item || colon + 1 == item + length)
        return bad_spec(spec, item, length);
    char value[40];
    int value_length = (int)(item + length - colon - 1);
    if (value_length >= (int)sizeof value) return bad_spec(spec, item, length);
    memcpy(value, colon + 1, (size_t)value_length);
    value[value_length] = '\0';
    size_t name_length = (size_t)(colon - item);
    char *end;
    if (name_length == 4 && !memcmp(item, "seed", 4)) {
        errno = 0;
        unsigned long long s = strtoull(value, &end, 10);
        if (errno || *end || !starts_number(value)) return bad_spec(spec, item, length);
        *seed = s;
        return NULL;
    }
    int kind = -1;
    for (int k = 0; k < CORE_FAULT_KINDS; k++)
        if (strlen(kind_names[k]) == name_length && !memcmp(item, kind_names[k], name_length))
            kind = k;
    if (kind < 0 || parsed[kind].mode != RULE_OFF) return bad_spec(spec, item, length);
    fault_rule *rule = &parsed[kind];
    errno = 0;
    if (kind == CORE_FAULT_DEVICE_LOST) {
        /* "porta:D@N": the value holds the device's own colon */
        char *at = strchr(value, '@');
        if (strncmp(value, "porta:", 6) || !at || !starts_number(value + 6) ||
            !starts_number(at + 1))
            return bad_spec(spec, item, length);
        long device = strtol(value + 6, &end, 10);
        if (errno || end != at || device < 0 || device > 1000000)
            return bad_spec(spec, item, length);
        long long nth = strtoll(at + 1, &end, 10);
        if (errno || *end || nth < 1) return bad_spec(spec, item, length);
        rule->mode = RULE_NTH;
        rule->device = (int)device;
        rule->nth = nth;
    } else if (value[0] == 'p') {
        double rate = strtod(value + 1, &end);
        if (errno || !starts_number(value + 1) || *end || !(rate >= 0 && rate <= 1))
            return bad_spec(spec, item, length);
        rule->mode = RULE_RATE;
        rule->threshold = rate >= 1 ? UINT64_MAX : (uint64_t)(rate * 18446744073709551616.0);
    } else {
        long long nth = strtoll(value, &end, 10);
        if (errno || !starts_number(value) || *end || nth < 1)
            return bad_spec(spec, item, length);
        rule->mode = RULE_NTH;
        rule->nth = nth;
    }
    snprintf(rule->text, sizeof rule->text, "%.*s", length, item);
    return NULL;
}

static porta_status *parse(const char *spec, fault_rule *parsed, uint64_t *seed) {
    memset(parsed, 0, CORE_FAULT_KINDS * sizeof *parsed);
    *seed = 1;
    if (!*spec) return NULL;
    for (const char *item = spec;; item++) {
        const char *comma = strchr(item, ',');
        int length = (int)(comma ? (size_t)(comma - item) : strlen(item));
        PORTA_TRY(parse_item(spec, item, length, parsed, seed));
        if (!comma) return NULL;
        item = comma;
    }
}

/* ---- the rules in force ---- */

static void install(const fault_rule *parsed, uint64_t seed) {
    pthread_mutex_lock(&rules_lock);
    atomic_store(&armed, false);
    bool any = false;
    for (int k = 0; k < CORE_FAULT_KINDS; k++) {
        rules[k] = parsed[k];
        atomic_store(&events[k], 0);
        atomic_store(&modes[k], parsed[k].mode);
        any |= parsed[k].mode != RULE_OFF;
    }
    atomic_store(&random_state, seed);
    atomic_store(&armed, any);
    atomic_store(&core_fault_may_hit, any);
    pthread_mutex_unlock(&rules_lock);
}

static pthread_once_t environment_once = PTHREAD_ONCE_INIT;

/* PORTA_FAULTS, once: a malformed value is said on stderr and injects
 * nothing, so a typo cannot pass for a run without failures unnoticed. */
static void read_environment(void) {
    const char *spec = getenv("PORTA_FAULTS");
    atomic_store(&core_fault_may_hit, false); /* until a rule is installed */
    if (!spec || !*spec) return;
    fault_rule parsed[CORE_FAULT_KINDS];
    uint64_t seed;
    porta_status *status = parse(spec, parsed, &seed);
    if (status) {
        fprintf(stderr, "porta: PORTA_FAULTS is ignored, no faults are injected: %s\n",
                porta_status_message(status));
        porta_status_free(status);
        return;
    }
    install(parsed, seed);
}

porta_status *porta_set_faults(const char *spec) {
    pthread_once(&environment_once, read_environment);
    fault_rule parsed[CORE_FAULT_KINDS];
    uint64_t seed;
    PORTA_TRY(parse(spec ? spec : "", parsed, &seed));
    install(parsed, seed);
    return NULL;
}

/* ---- checks ---- */

/* SplitMix64 over a shared counter: one uniform 64-bit draw per call,
 * lock-free, the same sequence for the same seed. */
static uint64_t draw(void) {
    uint64_t z = atomic_fetch_add(&random_state, 0x9e3779b97f4a7c15ull) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool core_fault_hit(core_fault_kind kind) {
    pthread_once(&environment_once, read_environment);
    if (!atomic_load_explicit(&armed, memory_order_relaxed)) return false;
    long long event = atomic_fetch_add(&events[kind], 1) + 1;
    switch (atomic_load(&modes[kind])) {
    case RULE_NTH: {
        pthread_mutex_lock(&rules_lock);
        bool hit = event == rules[kind].nth;
        pthread_mutex_unlock(&rules_lock);
        return hit;
    }
    case RULE_RATE: {
        uint64_t value = draw();
        pthread_mutex_lock(&rules_lock);
        bool hit = value < rules[kind].threshold || rules[kind].threshold == UINT64_MAX;
        pthread_mutex_unlock(&rules_lock);
        return hit;
    }
    default: return false;
    }
}

porta_status *core_fault_check(core_fault_kind kind, porta_code code, const char *fmt, ...) {
    if (!core_fault_hit(kind)) return NULL;
    char action[512], rule[40];
    va_list args;
    va_start(args, fmt);
    vsnprintf(action, sizeof action, fmt, args);
    va_end(args);
    pthread_mutex_lock(&rules_lock);
    snprintf(rule, sizeof rule, "%s", rules[kind].text);
    pthread_mutex_unlock(&rules_lock);
    return porta_error(code, "%s failed: fault injected by the rule %s (PORTA_FAULTS)", action,
                       rule);
}

porta_status *core_fault_device_check(int index, const char *action) {
    pthread_once(&environment_once, read_environment);
    if (!atomic_load_explicit(&armed, memory_order_relaxed) ||
        atomic_load(&modes[CORE_FAULT_DEVICE_LOST]) != RULE_NTH)
        return NULL;
    char rule[40];
    pthread_mutex_lock(&rules_lock);
    bool this_device = rules[CORE_FAULT_DEVICE_LOST].device == index;
    long long nth = rules[CORE_FAULT_DEVICE_LOST].nth;
    snprintf(rule, sizeof rule, "%s", rules[CORE_FAULT_DEVICE_LOST].text);
    pthread_mutex_unlock(&rules_lock);
    if (!this_device || atomic_fetch_add(&events[CORE_FAULT_DEVICE_LOST], 1) + 1 < nth)
        return NULL;
    return porta_error(PORTA_ERR_DEVICE_LOST,
                       "porta:%d: device lost: %s failed: fault injected by the rule %s "
                       "(PORTA_FAULTS)",
                       index, action, rule);
}

ssize_t core_fault_write(int fd, const void *data, size_t bytes) {
    if (!core_fault_hit(CORE_FAULT_WRITE)) return write(fd, data, bytes);
    if (bytes > 1 && write(fd, data, bytes / 2) < 0) return -1;
    errno = ENOSPC;
    return -1;
}

size_t core_fault_fwrite(const void *data, size_t bytes, FILE *file) {
    if (!core_fault_hit(CORE_FAULT_WRITE)) return fwrite(data, 1, bytes, file);
    size_t written = fwrite(data, 1, bytes / 2, file);
    errno = ENOSPC;
    return written;
}
