/* porta train --devices: the devices a run may go to, in order, each as the
 * PORTA_VISIBLE_DEVICES value that makes the script's plain "porta" that
 * device. "auto[:OBJECTIVE]" puts the device select_device picks by stored
 * measurements first, the others after it in index order. */
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

/* auto[:OBJECTIVE]: the chosen device, then the others by index. */
static int automatic(const char *objective, train_device *devices, int *count) {
    int best, n = porta_device_count();
    porta_status *status = porta_select_device(objective, NULL, getenv("PORTA_PRICES"), true,
                                               &best);
    if (status) return (cli_fail("train", status), 2);
    fprintf(stderr, "porta train: --devices auto:%s: porta:%d is the best by the stored "
                    "measurements; the others follow in index order\n", objective, best);
    for (int k = -1; k < n && *count < CLI_MAX_DEVICES; k++) {
        int index = k < 0 ? best : k;
        if (k == best) continue;
        porta_device *device;
        status = porta_device_get(index, &device);
        if (status) return (cli_fail("train", status), 2);
        int code = describe(device, NULL, &devices[(*count)++]);
        if (code) return code;
    }
    return 0;
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
