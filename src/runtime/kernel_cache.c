/* The on-disk kernel cache's directory and atomic writes. When the
 * configured directory cannot be used, a private temporary one stands in
 * for the process, said once on stderr and removed at exit. */
#include "runtime/kernel_cache.h"

#include <errno.h>
#include <ftw.h>
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
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return porta_error(PORTA_ERR_IO, "cannot use %s: it is not a directory", path);
    return NULL;
}

static pthread_mutex_t private_lock = PTHREAD_MUTEX_INITIALIZER;
static char private_dir[512]; /* guarded by private_lock */
static pid_t private_owner;   /* the process that made private_dir */
static bool private_warned;   /* guarded by private_lock */

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    if (type == FTW_DP)
        rmdir(path);
    else
        unlink(path);
    return 0;
}

/* At exit: the private directory goes with its process. A forked child
 * (a data-loader worker) inherits the handler but not the directory. */
static void remove_private_dir(void) {
    pthread_mutex_lock(&private_lock);
    if (private_dir[0] && getpid() == private_owner)
        nftw(private_dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    pthread_mutex_unlock(&private_lock);
}

/* Says once why the configured cache is not used and what is instead. */
static void warn_fallback(const char *configured, const porta_status *why,
                          const porta_status *outcome) {
    if (private_warned) return;
    private_warned = true;
    if (outcome)
        fprintf(stderr,
                "porta: the kernel cache (%s) is unusable: %s; no temporary directory either "
                "(%s): fused kernels run as separate ops\n",
                configured, porta_status_message(why), porta_status_message(outcome));
    else
        fprintf(stderr,
                "porta: the kernel cache (%s) is unusable: %s; using %s instead, removed at "
                "exit\n",
                configured, porta_status_message(why), private_dir);
}

static porta_status *private_cache_dir(const char *sub, char *dir, size_t cap,
                                       const char *configured, porta_status *why) {
    pthread_mutex_lock(&private_lock);
    porta_status *status = NULL;
    if (!private_dir[0] || access(private_dir, W_OK) != 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(private_dir, sizeof private_dir, "%s/porta-kernels-XXXXXX",
                 tmp && *tmp ? tmp : "/tmp");
        if (mkdtemp(private_dir)) {
            static bool removal_registered;
            if (!removal_registered) removal_registered = atexit(remove_private_dir) == 0;
            private_owner = getpid();
        } else {
            status = porta_error(PORTA_ERR_IO, "%s: %s", private_dir, strerror(errno));
            private_dir[0] = '\0';
        }
    }
    if (!status) {
        snprintf(dir, cap, "%s/%s", private_dir, sub);
        status = make_dirs(dir);
    }
    warn_fallback(configured, why, status);
    if (status) {
        porta_status *joined = porta_error(PORTA_ERR_IO, "%s, and no private kernel directory "
                                           "either: %s", porta_status_message(why),
                                           porta_status_message(status));
        porta_status_free(status);
        status = joined;
    }
    pthread_mutex_unlock(&private_lock);
    porta_status_free(why);
    return status;
}

porta_status *rt_kernel_cache_dir(const char *sub, char *dir, size_t cap) {
    const char *env = getenv("PORTA_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME");
    const char *home = getenv("HOME");
    char configured[600]; /* the variable the location came from, for the warning */
    int n;
    if (env && *env) {
        snprintf(configured, sizeof configured, "PORTA_CACHE_DIR=\"%.500s\"", env);
        n = snprintf(dir, cap, "%s/%s", env, sub);
    } else if (xdg && *xdg) {
        snprintf(configured, sizeof configured, "XDG_CACHE_HOME=\"%.500s\"", xdg);
        n = snprintf(dir, cap, "%s/porta/%s", xdg, sub);
    } else if (home && *home) {
        snprintf(configured, sizeof configured, "HOME=\"%.500s\"", home);
        n = snprintf(dir, cap, "%s/.cache/porta/%s", home, sub);
    } else {
        return private_cache_dir(sub, dir, cap, "none set",
                                 porta_error(PORTA_ERR_IO, "no PORTA_CACHE_DIR, XDG_CACHE_HOME "
                                                           "or HOME"));
    }
    if (n < 0 || (size_t)n >= cap)
        return private_cache_dir(
            sub, dir, cap, configured,
            porta_error(PORTA_ERR_IO, "its path is too long (%d bytes)", n));
    porta_status *status = make_dirs(dir);
    return status ? private_cache_dir(sub, dir, cap, configured, status) : NULL;
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
