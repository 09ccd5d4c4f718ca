/* Device choice from stored measurements: the standard workload measured
 * once and reused, comparisons recorded and chosen from, and the errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "porta_report.h"
#include "test.h"

static char *store_file(char *path, size_t cap, const char *dir) {
    snprintf(path, cap, "%s/select/measurements.json", dir);
    return path;
}

TEST(test_report_select_measures_once_and_reuses) {
    const char *dir = test_cache_begin();
    char path[1024];
    store_file(path, sizeof path, dir);
    int index = -1;
    CHECK_OK(porta_select_device("throughput", NULL, NULL, true, &index));
    CHECK(index >= 0 && index < porta_device_count());
    struct stat first, second;
    CHECK(stat(path, &first) == 0);
    int again = -1;
    CHECK_OK(porta_select_device("latency", NULL, NULL, true, &again));
    CHECK(stat(path, &second) == 0);
    CHECK_MSG(first.st_mtim.tv_sec == second.st_mtim.tv_sec &&
                  first.st_mtim.tv_nsec == second.st_mtim.tv_nsec,
              "the store was written again: a device was measured twice");
    test_cache_end();
}

TEST(test_report_select_chooses_from_a_comparison) {
    test_cache_begin();
    porta_report *report = NULL;
    CHECK_OK(porta_report_new("train.py --fast", &report));
    /* Device 0 fast, the last device slow but frugal with energy. */
    int count = porta_device_count();
    for (int i = 0; i < count; i++) {
        porta_device *device;
        porta_device_info info;
        CHECK_OK(porta_device_get(i, &device));
        CHECK_OK(porta_device_info_get(device, &info));
        char id[32];
        snprintf(id, sizeof id, "porta:%d", i);
        porta_report_device *d;
        CHECK_OK(porta_report_add_device(report, id, info.backend, info.name, &d));
        double step = i == 0 ? 0.01 : 0.1;
        CHECK_OK(porta_report_set_steps(d, &step, 1, 10));
        if (i == count - 1 && i > 0) {
            d->energy_measured = true;
            d->energy_joules = 1.0;
            strcpy(d->energy_source, "rapl");
        } else {
            strcpy(d->energy_note, "no counter here");
        }
    }
    porta_report_derive(report);
    CHECK_OK(porta_select_record(report));
    porta_report_free(report);
    int index = -1;
    CHECK_OK(porta_select_device("throughput", "train.py --fast", NULL, false, &index));
    CHECK(index == 0);
    /* The figures weighed, lower better: minus samples/s, then energy
     * (NaN where a device has no reading). */
    double scores[8];
    int scored = count < 8 ? count : 8;
    CHECK_OK(porta_select_scores("throughput", "train.py --fast", NULL, false, scores, scored));
    for (int i = 0; i < scored; i++)
        CHECK_MSG(fabs(scores[i] - (i == 0 ? -1000.0 : -100.0)) < 1e-6, "porta:%d: %g", i,
                  scores[i]);
    if (count > 1) {
        CHECK_OK(porta_select_scores("energy", "train.py --fast", NULL, false, scores, scored));
        for (int i = 0; i < scored; i++)
            CHECK(i == count - 1 ? fabs(scores[i] - 0.1) < 1e-9 : isnan(scores[i]));
    }
    if (count > 1) {
        CHECK_OK(porta_select_device("energy", "train.py --fast", NULL, false, &index));
        CHECK(index == count - 1);
        CHECK_OK(porta_select_device("latency", "train.py --fast", NULL, false, &index));
        CHECK(index == 0);
    } else {
        CHECK_ERR(porta_select_device("energy", "train.py --fast", NULL, false, &index),
                  PORTA_ERR_UNAVAILABLE, "porta:0: no counter here");
    }
    test_cache_end();
}

TEST(test_report_select_errors) {
    test_cache_begin();
    int index;
    CHECK_ERR(porta_select_device("speed", NULL, NULL, false, &index), PORTA_ERR_INVALID_ARGUMENT,
              "objective must be one of throughput, latency, cost, energy, not 'speed'");
    CHECK_ERR(porta_select_device("cost", NULL, NULL, false, &index), PORTA_ERR_INVALID_ARGUMENT,
              "needs a price file");
    CHECK_ERR(porta_select_device("throughput", "never ran", NULL, true, &index),
              PORTA_ERR_UNAVAILABLE, "no measurements for workload 'never ran'");
    test_cache_end();
}
