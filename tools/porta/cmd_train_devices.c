/* porta train --devices: the devices a run may go to, in order, each as the
 * PORTA_VISIBLE_DEVICES value that makes the script's plain "porta" that
 * device. "auto[:OBJECTIVE]" orders them by select_device's figures from
 * stored measurements; --move-when cheaper compares their costs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_train.h"
#include "porta_report.h"

/* The value of PORTA_VISIBLE_DEVICES that shows porta:index of this
 * process: the index itself, or, where this process already has a
 * PORTA_VISIBLE_DEVICES, its entry for that device. */
static int visible_value(int index, char *out, size_t cap) {
    const char *parent = getenv("PORTA_VISIBLE_DEVICES");
    if (!parent || !*parent) {
        snprintf(out, cap, "%d", index);
        return 0;
    }
    int entries = 1;
    for (const char *c = parent; *c; c++) entries += *c == ',';
    if (entries != porta_device_count())
        return cli_usage("train", "cannot tell which device porta:%d is under "
                                  "PORTA_VISIBLE_DEVICES=%s (its entries are not one device "
                                  "each): name the devices by backend or unset it",
                         index, parent);
    const char *item = parent;
    for (int i = 0; i < index; i++) item = strchr(item, ',') + 1;
    int length = (int)strcspn(item, ",");
    snprintf(out, cap, "%.*s", length, item);
    return 0;
}

static int describe(porta_device *device, const char *visible, train_device *out) {
    porta_device_info info;
    porta_status *status = porta_device_info_get(device, &info);
    if (status) return (cli_fail("train", status), 2);
    out->index = info.index;
    snprintf(out->label, sizeof out->label, "porta:%d (%s: %s)", info.index, info.backend,
             info.name);
    if (visible) {
        snprintf(out->visible, sizeof out->visible, "%s", visible);
        return 0;
    }
    return visible_value(info.index, out->visible, sizeof out->visible);
}

/* The figure select_device weighs, as people read it. */
static double readable(const char *objective, double score) {
    return strcmp(objective, "throughput") ? score : -score;
}

static const char *unit(const char *objective) {
    return !strcmp(objective, "throughput") ? "samples/s"
           : !strcmp(objective, "latency")  ? "ms per step"
           : !strcmp(objective, "cost")     ? "per million samples"
                                            : "J per sample";
}

/* auto[:OBJECTIVE]: the devices with a figure, best first, then the others
 * by index. */
static int automatic(const char *objective, train_device *devices, int *count) {
    int n = porta_device_count();
    if (n > CLI_MAX_DEVICES) n = CLI_MAX_DEVICES;
    double scores[CLI_MAX_DEVICES];
    porta_status *status = porta_select_scores(objective, NULL, getenv("PORTA_PRICES"), true,
                                               scores, n);
    if (status) return (cli_fail("train", status), 2);
    int order[CLI_MAX_DEVICES];
    for (int i = 0; i < n; i++) order[i] = i;
    for (int i = 1; i < n; i++) /* insertion sort: figures ascending, NaN last, stable */
        for (int j = i; j > 0; j--) {
            double a = scores[order[j - 1]], b = scores[order[j]];
            if (!(isnan(a) && !isnan(b)) && !(b < a)) break;
            int t = order[j - 1];
            order[j - 1] = order[j];
            order[j] = t;
        }
    fprintf(stderr, "porta train: --devices auto:%s, by the stored measurements of the "
                    "standard workload:", objective);
    for (int i = 0; i < n; i++) {
        porta_device *device;
        status = porta_device_get(order[i], &device);
        if (status) return (cli_fail("train", status), 2);
        int code = describe(device, NULL, &devices[(*count)++]);
        if (code) return code;
        if (isnan(scores[order[i]]))
            fprintf(stderr, "%s porta:%d (no figure)", i ? "," : "", order[i]);
        else
            fprintf(stderr, "%s porta:%d (%.4g %s)", i ? "," : "", order[i],
                    readable(objective, scores[order[i]]), unit(objective));
    }
    fprintf(stderr, "\n");
    return 0;
}

int train_cheaper_device(const train_device *devices, int count, int current, long checkpoint,
                         const bool *failed) {
    int n = porta_device_count();
    if (n > CLI_MAX_DEVICES) n = CLI_MAX_DEVICES;
    double cost[CLI_MAX_DEVICES];
    const char *prices = getenv("PORTA_PRICES");
    porta_status *status = porta_select_scores("cost", NULL, prices, true, cost, n);
    if (status) {
        fprintf(stderr, "porta train: --move-when cheaper: staying at the checkpoint of step "
                        "%ld: %s\n", checkpoint, porta_status_message(status));
        porta_status_free(status);
        return -1;
    }
    if (checkpoint < 0) { /* before the first run: the figures only */
        fprintf(stderr, "porta train: --move-when cheaper: cost per million samples by the "
                        "stored measurements and %s:", prices);
        for (int i = 0; i < count; i++)
            fprintf(stderr, "%s porta:%d %.4g", i ? "," : "", devices[i].index,
                    devices[i].index < n ? cost[devices[i].index] : NAN);
        fprintf(stderr, "; checked again at each checkpoint\n");
        return -1;
    }
    int here = devices[current].index, best = -1;
    for (int i = 0; i < count; i++) {
        int index = devices[i].index;
        if (i == current || failed[i] || index >= n || isnan(cost[index])) continue;
        if (best < 0 || cost[index] < cost[devices[best].index]) best = i;
    }
    double now = here < n ? cost[here] : NAN;
    if (best < 0 || !(cost[devices[best].index] < 0.9 * now) ) {
        fprintf(stderr, "porta train: --move-when cheaper: staying on porta:%d at the "
                        "checkpoint of step %ld: it costs %.4g per million samples",
                here, checkpoint, now);
        if (best >= 0)
            fprintf(stderr, ", the cheapest other, porta:%d, %.4g (a move needs under 90%%)",
                    devices[best].index, cost[devices[best].index]);
        fprintf(stderr, " (prices: %s)\n", prices);
        return -1;
    }
    fprintf(stderr, "porta train: --move-when cheaper: moving from porta:%d to %s after the "
                    "checkpoint of step %ld: %.4g per million samples there, %.4g here "
                    "(prices: %s)\n", here, devices[best].label, checkpoint,
            cost[devices[best].index], now, prices);
    return best;
}

int train_devices(const char *spec, train_device *devices, int *count) {
    *count = 0;
    if (!strncmp(spec, "auto", 4) && (!spec[4] || spec[4] == ':'))
        return automatic(spec[4] ? spec + 5 : "throughput", devices, count);
    porta_device *found[CLI_MAX_DEVICES];
    int code = cli_devices("train", spec, found, count);
    if (code) return code;
    /* A backend name stays a name (PORTA_VISIBLE_DEVICES takes it as is). */
    char buffer[256];
    snprintf(buffer, sizeof buffer, "%s", strcmp(spec, "all") ? spec : "");
    char *save = NULL, *item = strtok_r(buffer, ",", &save);
    for (int i = 0; i < *count; i++, item = item ? strtok_r(NULL, ",", &save) : NULL) {
        const char *named = item && strncmp(item, "porta:", 6) &&
                                    (item[0] < '0' || item[0] > '9') ? item : NULL;
        code = describe(found[i], named, &devices[i]);
        if (code) return code;
    }
    return 0;
}
