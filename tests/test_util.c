/* Helpers shared by the tests: devices, deterministic data, comparisons. */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/dtype.h"
#include "runtime/tensor.h"
#include "test.h"

porta_device *test_cpu(void) {
    porta_device *device = NULL;
    porta_status *status = porta_device_get(0, &device);
    if (status) {
        fprintf(stderr, "no CPU device: %s\n", porta_status_message(status));
        exit(2);
    }
    return device;
}

porta_device *test_backend_device(const char *backend, const char *test) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (strcmp(info.backend, backend) == 0) return device;
    }
    const char *visible = getenv("PORTA_VISIBLE_DEVICES");
    if (visible && *visible) {
        fprintf(stderr, "%s: NOT RUN, PORTA_VISIBLE_DEVICES=%s shows no %s device\n", test,
                visible, backend);
        return NULL;
    }
    const char *why = porta_backend_unavailable_reason(backend);
    CHECK_MSG(why != NULL, "%s: no %s device and no reason given", test, backend);
    char require[32] = "PORTA_REQUIRE_";
    for (size_t n = strlen(require); *backend && n + 1 < sizeof require; n++)
        require[n] = (char)toupper((unsigned char)*backend++);
    if (getenv(require))
        test_fail(__FILE__, __LINE__, "%s: %s is set but %s", test, require,
                  why ? why : "(no reason)");
    else
        fprintf(stderr, "%s: NOT RUN, no %s device: %s\n", test, require + 14,
                why ? why : "(no reason)");
    return NULL;
}

int test_run_command(const char *line, char *output, size_t cap) {
    size_t length = strlen(line) + sizeof " 2>&1";
    char *command = malloc(length);
    if (!command) return -1;
    snprintf(command, length, "%s 2>&1", line);
    FILE *pipe = popen(command, "r");
    free(command);
    if (!pipe) return -1;
    size_t used = fread(output, 1, cap - 1, pipe);
    output[used] = '\0';
    int status = pclose(pipe);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

test_rng test_rng_make(uint64_t seed) { return (test_rng){seed * 0x9e3779b97f4a7c15ull + 1}; }

/* splitmix64: small, fast, and good enough for test data. */
static uint64_t next_u64(test_rng *rng) {
    uint64_t z = (rng->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double test_uniform(test_rng *rng, double low, double high) {
    return low + (high - low) * (double)(next_u64(rng) >> 11) * 0x1.0p-53;
}

int64_t test_int(test_rng *rng, int64_t low, int64_t high) {
    return low + (int64_t)(next_u64(rng) % (uint64_t)(high - low + 1));
}

porta_tensor *test_random_tensor(test_rng *rng, porta_dtype dtype, int rank, const int64_t *sizes,
                                 double low, double high) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_empty(test_cpu(), dtype, rank, sizes, &t);
    if (status) {
        fprintf(stderr, "test_random_tensor: %s\n", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    int64_t numel = porta_tensor_numel(t);
    size_t elem = porta_dtype_size(dtype);
    status = rt_buffer_host_access(t->buffer); /* written in place below */
    if (status) {
        fprintf(stderr, "test_random_tensor: %s\n", porta_status_message(status));
        porta_status_free(status);
        porta_tensor_release(t);
        return NULL;
    }
    char *data = core_tensor_data(t);
    for (int64_t i = 0; i < numel; i++) {
        double v;
        if (dtype == PORTA_BOOL)
            v = (double)test_int(rng, 0, 1);
        else if (porta_dtype_is_float(dtype))
            v = test_uniform(rng, low, high);
        else if (dtype == PORTA_U8)
            v = (double)test_int(rng, 0, 20);
        else
            v = (double)test_int(rng, -10, 10);
        core_store_from_double(dtype, data + (size_t)i * elem, v);
    }
    return t;
}

porta_tensor *test_empty(porta_dtype dtype, int rank, const int64_t *sizes) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_empty(test_cpu(), dtype, rank, sizes, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "tensor_empty: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return t;
}

porta_tensor *test_view_on(const porta_tensor *storage, int rank, const int64_t *sizes,
                           const int64_t *strides, int64_t offset) {
    if (!storage) return NULL;
    porta_tensor *view = NULL;
    porta_status *status = porta_tensor_view(porta_tensor_buffer(storage),
                                             porta_tensor_dtype(storage), rank, sizes, strides,
                                             offset, &view);
    if (status) {
        test_fail(__FILE__, __LINE__, "tensor_view: %s", porta_status_message(status));
        porta_status_free(status);
        return NULL;
    }
    return view;
}

void test_shuffle(test_rng *rng, int *order, int n) {
    for (int i = n - 1; i > 0; i--) {
        int j = (int)test_int(rng, 0, i), tmp = order[i];
        order[i] = order[j];
        order[j] = tmp;
    }
}

int64_t test_offset(int rank, const int64_t *idx, const int64_t *strides) {
    int64_t off = 0;
    for (int d = 0; d < rank; d++) off += idx[d] * strides[d];
    return off;
}

bool test_next_index(int rank, const int64_t *sizes, int64_t *idx) {
    for (int d = rank - 1; d >= 0; d--) {
        if (++idx[d] < sizes[d]) return true;
        idx[d] = 0;
    }
    return false;
}

double *test_to_doubles(const porta_tensor *t) {
    int64_t numel = porta_tensor_numel(t);
    double *values = malloc((size_t)(numel > 0 ? numel : 1) * sizeof *values);
    size_t elem = porta_dtype_size(t->dtype);
    char *bytes = malloc((size_t)(numel > 0 ? numel : 1) * elem);
    porta_status *status = porta_tensor_to_host(t, bytes, (size_t)numel * elem);
    if (status) {
        fprintf(stderr, "test_to_doubles: %s\n", porta_status_message(status));
        porta_status_free(status);
        memset(bytes, 0, (size_t)(numel > 0 ? numel : 1) * elem);
    }
    for (int64_t i = 0; i < numel; i++) values[i] = core_load_as_double(t->dtype, bytes + (size_t)i * elem);
    free(bytes);
    return values;
}

bool test_close(const char *what, const double *got, const double *want, int64_t n, double rtol,
                double atol) {
    int reported = 0;
    bool ok = true;
    for (int64_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        bool match;
        if (isnan(w))
            match = isnan(g);
        else if (isinf(w))
            match = g == w;
        else
            match = fabs(g - w) <= atol + rtol * fabs(w);
        if (!match) {
            ok = false;
            if (reported++ < 5)
                test_fail(__FILE__, __LINE__, "%s: element %lld is %.9g, expected %.9g", what,
                          (long long)i, g, w);
        }
    }
    return ok;
}

double test_rtol(porta_dtype dtype) {
    switch (dtype) {
    case PORTA_F16: return 1e-3;
    case PORTA_BF16: return 8e-3;
    case PORTA_F32: return 1e-5;
    case PORTA_F64: return 1e-12;
    default: return 0.0;
    }
}

static char cache_dir[256];

const char *test_cache_begin(void) {
    snprintf(cache_dir, sizeof cache_dir, "%s/porta-test-cache-XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(cache_dir)) test_fail(__FILE__, __LINE__, "mkdtemp %s failed", cache_dir);
    setenv("PORTA_CACHE_DIR", cache_dir, 1);
    return cache_dir;
}

int test_count_entries(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

void test_remove_tree(const char *path) {
    DIR *dir = opendir(path);
    if (!dir) return;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char child[1024];
        snprintf(child, sizeof child, "%s/%s", path, e->d_name);
        if (unlink(child) != 0) test_remove_tree(child);
    }
    closedir(dir);
    rmdir(path);
}

void test_cache_end(void) {
    test_remove_tree(cache_dir);
    unsetenv("PORTA_CACHE_DIR");
}
