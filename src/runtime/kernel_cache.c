/* The on-disk kernel cache's directory and atomic writes. */
#include "runtime/kernel_cache.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fault.h"
#include "core/status.h"

static porta_status *make_dirs(char *path) {
    for (char *p = path + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        int rc = mkdir(path, 0755);
        *p = '/';
        if (rc != 0 && errno != EEXIST)
            return porta_error(PORTA_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST)
        return porta_error(PORTA_ERR_IO, "cannot create %s: %s", path, strerror(errno));
    return NULL;
}

static pthread_mutex_t private_lock = PTHREAD_MUTEX_INITIALIZER;
static char private_dir[512]; /* guarded by private_lock */

static porta_status *private_cache_dir(const char *sub, char *dir, size_t cap,
                                       porta_status *why) {
    pthread_mutex_lock(&private_lock);
    porta_status *status = NULL;
    if (!private_dir[0] || access(private_dir, W_OK) != 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(private_dir, sizeof private_dir, "%s/porta-kernels-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(private_dir)) {
            private_dir[0] = '\0';
            status = porta_error(PORTA_ERR_IO, "%s, and no private kernel directory either: %s",
                                 porta_status_message(why), strerror(errno));
        }
    }
    if (!status) {
        snprintf(dir, cap, "%s/%s", private_dir, sub);
        status = make_dirs(dir);
    }
    pthread_mutex_unlock(&private_lock);
    porta_status_free(why);
    return status;
}

porta_status *rt_kernel_cache_dir(const char *sub, char *dir, size_t cap) {
    const char *env = getenv("PORTA_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    int n;
    if (env && *env)
        n = snprintf(dir, cap, "%s/%s", env, sub);
    else if (xdg && *xdg)
        n = snprintf(dir, cap, "%s/porta/%s", xdg, sub);
    else if (home && *home)
        n = snprintf(dir, cap, "%s/.cache/porta/%s", home, sub);
    else
        return private_cache_dir(sub, dir, cap,
                                 porta_error(PORTA_ERR_IO, "no cache directory set"));
    if (n < 0 || (size_t)n >= cap)
        return private_cache_dir(
            sub, dir, cap, porta_error(PORTA_ERR_IO, "kernel cache path too long (%d bytes)", n));
    porta_status *status = make_dirs(dir);
    return status ? private_cache_dir(sub, dir, cap, status) : NULL;
}

static atomic_uint temp_counter;

porta_status *rt_kernel_cache_write(const char *dir, const char *name, const void *data,
                                       size_t bytes) {
    char tmp[1024], final[1024];
    snprintf(tmp, sizeof tmp, "%s/.%s.%ld.%u.tmp", dir, name, (long)getpid(),
             atomic_fetch_add(&temp_counter, 1));
    snprintf(final, sizeof final, "%s/%s", dir, name);
    FILE *f = fopen(tmp, "wb");
    if (!f) return porta_error(PORTA_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    bool ok = core_fault_fwrite(data, bytes, f) == bytes;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, final) != 0) {
        porta_status *status =
            porta_error(PORTA_ERR_IO, "cannot write %s: %s", final, strerror(errno));
        unlink(tmp);
        return status;
    }
    return NULL;
}

uint64_t rt_hash_text(uint64_t h, const char *s) {
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    h ^= 0xff;
    h *= 0x100000001b3ull;
    return h;
}
