/* Energy counters: RAPL arithmetic over a synthetic powercap tree
 * (PORTA_POWERCAP_ROOT), wrap-around, several packages, subdomains left
 * out, unreadable and missing counters; NVML's absence is a reason. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "porta_energy.h"
#include "test.h"

static void write_file(const char *dir, const char *domain, const char *file, const char *text) {
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, domain);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", dir, domain, file);
    FILE *f = fopen(path, "w");
    if (!f) {
        test_fail(__FILE__, __LINE__, "cannot write %s", path);
        return;
    }
    fputs(text, f);
    fclose(f);
}

static void set_domain(const char *dir, const char *domain, unsigned long long energy,
                       unsigned long long range) {
    char text[32];
    snprintf(text, sizeof text, "%llu\n", energy);
    write_file(dir, domain, "energy_uj", text);
    snprintf(text, sizeof text, "%llu\n", range);
    write_file(dir, domain, "max_energy_range_uj", text);
}

static void remove_tree(const char *dir) {
    char command[PATH_MAX + 16];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    if (system(command) != 0) test_fail(__FILE__, __LINE__, "cannot remove %s", dir);
}

TEST(test_energy_rapl_sums_packages_and_unwraps) {
    char dir[] = "/tmp/porta-powercap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    setenv("PORTA_POWERCAP_ROOT", dir, 1);
    set_domain(dir, "intel-rapl:0", 999000, 1000000);
    set_domain(dir, "intel-rapl:1", 5000000, 262143328850ull);
    set_domain(dir, "intel-rapl:0:0", 1, 1000000); /* core domain: inside package 0 */
    write_file(dir, "intel-rapl:0", "name", "package-0\n");
    porta_energy_sample start, end;
    char why[PORTA_ENERGY_REASON_CAP] = "";
    CHECK_MSG(porta_energy_read_rapl(&start, why, sizeof why), "start: %s", why);
    CHECK(start.source == PORTA_ENERGY_RAPL && start.count == 2);
    /* Package 0 wrapped: 999000 -> 1000000 = 0 -> 500 (1500 uJ); package 1
     * gained 2.5 J; the subdomain's change is not counted again. */
    set_domain(dir, "intel-rapl:0", 500, 1000000);
    set_domain(dir, "intel-rapl:1", 7500000, 262143328850ull);
    set_domain(dir, "intel-rapl:0:0", 900000, 1000000);
    CHECK_MSG(porta_energy_read_rapl(&end, why, sizeof why), "end: %s", why);
    double joules = porta_energy_joules(&start, &end);
    CHECK_MSG(fabs(joules - 2.5015) < 1e-12, "joules %.9f, expected 2.5015", joules);
    /* No change: zero, not a wrap. */
    CHECK(porta_energy_joules(&end, &end) == 0.0);
    /* Different sources or counter sets cannot be compared. */
    porta_energy_sample other = end;
    other.count = 1;
    CHECK(porta_energy_joules(&start, &other) < 0);
    other = end;
    other.source = PORTA_ENERGY_NVML;
    CHECK(porta_energy_joules(&start, &other) < 0);
    unsetenv("PORTA_POWERCAP_ROOT");
    remove_tree(dir);
}

TEST(test_energy_rapl_says_why_not_measurable) {
    char dir[] = "/tmp/porta-powercap-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char why[PORTA_ENERGY_REASON_CAP] = "";
    porta_energy_sample sample;
    char missing[PATH_MAX];
    snprintf(missing, sizeof missing, "%s/absent", dir);
    setenv("PORTA_POWERCAP_ROOT", missing, 1);
    CHECK(!porta_energy_read_rapl(&sample, why, sizeof why));
    CHECK_MSG(strstr(why, "no powercap interface") && strstr(why, "absent"), "why: %s", why);

    setenv("PORTA_POWERCAP_ROOT", dir, 1);
    CHECK(!porta_energy_read_rapl(&sample, why, sizeof why));
    CHECK_MSG(strstr(why, "no RAPL package domain"), "why: %s", why);

    /* A counter that cannot be read (a directory in its place: unreadable
     * even for root, unlike a file without permissions). */
    set_domain(dir, "intel-rapl:0", 10, 100);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/intel-rapl:0/energy_uj", dir);
    unlink(path);
    mkdir(path, 0755);
    CHECK(!porta_energy_read_rapl(&sample, why, sizeof why));
    CHECK_MSG(strstr(why, "energy_uj is not readable"), "why: %s", why);
    rmdir(path);
    write_file(dir, "intel-rapl:0", "energy_uj", "lots\n");
    CHECK(!porta_energy_read_rapl(&sample, why, sizeof why));
    CHECK_MSG(strstr(why, "does not hold a counter"), "why: %s", why);
    snprintf(path, sizeof path, "%s/intel-rapl:0/max_energy_range_uj", dir);
    write_file(dir, "intel-rapl:0", "energy_uj", "10\n");
    unlink(path);
    CHECK(!porta_energy_read_rapl(&sample, why, sizeof why));
    CHECK_MSG(strstr(why, "max_energy_range_uj is not readable"), "why: %s", why);
    unsetenv("PORTA_POWERCAP_ROOT");
    remove_tree(dir);
}

/* The CPU backend reads RAPL; a device with no counter is named with why. */
TEST(test_energy_device_mapping) {
    char why[PORTA_ENERGY_REASON_CAP] = "";
    porta_energy_sample sample;
    setenv("PORTA_POWERCAP_ROOT", "/nonexistent-powercap", 1);
    porta_device_info cpu = {.index = 0, .backend = "cpu", .name = "test"};
    CHECK(!porta_energy_read_device(&cpu, &sample, why, sizeof why));
    CHECK_MSG(strstr(why, "/nonexistent-powercap"), "why: %s", why);
    porta_device_info gpu = {.index = 1, .backend = "opencl", .name = "Some OpenCL GPU"};
    CHECK(!porta_energy_read_device(&gpu, &sample, why, sizeof why));
    CHECK_MSG(strstr(why, "no energy counter for the OpenCL device 'Some OpenCL GPU'"),
              "why: %s", why);
    unsetenv("PORTA_POWERCAP_ROOT");
    /* NVML, loaded once per process, named by PORTA_NVML_LIBRARY. */
    const char *saved = getenv("PORTA_NVML_LIBRARY");
    setenv("PORTA_NVML_LIBRARY", "libno-such-nvml.so", 1);
    porta_device_info cuda = {.index = 2, .backend = "cuda", .name = "GPU"};
    bool read = porta_energy_read_device(&cuda, &sample, why, sizeof why);
    CHECK(!read);
    CHECK_MSG(strstr(why, "NVML is not loadable (libno-such-nvml.so"), "why: %s", why);
    if (saved) setenv("PORTA_NVML_LIBRARY", saved, 1);
    else unsetenv("PORTA_NVML_LIBRARY");
    CHECK(strstr(porta_energy_source_note(PORTA_ENERGY_RAPL), "shared") != NULL);
}
