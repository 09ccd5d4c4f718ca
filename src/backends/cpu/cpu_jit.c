/* The CPU JIT: kernel IR -> C source -> the system compiler -> dlopen.
 *
 * Lookup order: programs loaded in this process (by kir_hash, confirmed by
 * comparing the whole source), then the disk cache, then the compiler. A
 * disk entry's name hashes the source, the compiler's identity (its
 * --version line), the flags and the CPU (model and feature flags, since
 * objects are built for it), so a new compiler, flag set or machine never
 * loads an old object. Entries are written atomically: compiled into a temp file
 * of a unique name in the same directory, sealed (a trailer with the
 * object's length and hash, runtime/kernel_cache.h) and renamed into place,
 * so processes sharing the cache see a whole file or none. An entry that is
 * not a regular file, does not match its seal, does not load, lacks a
 * symbol or carries another kernel's key is rebuilt: the seal is checked
 * before dlopen, which faults on a damaged object. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backends/cpu/cpu_jit.h"
#include "codegen/codegen_c.h"
#include "core/fault.h"
#include "core/status.h"
#include "runtime/compile_stats.h"
#include "runtime/kernel_cache.h"

extern char **environ;

/* No -ffast-math: kernels keep IEEE semantics. fp-contract off keeps a * b
 * + c two roundings, as the eager kernels (built as ISO C) compute it;
 * without errno, sqrt and friends inline, with the same results. */
static const char *const compile_flags[] = {
    "-O3", "-fPIC", "-shared", "-march=native", "-ffp-contract=off", "-fno-math-errno",
    "-std=gnu11", "-w"};
#define FLAG_COUNT (int)(sizeof compile_flags / sizeof compile_flags[0])

typedef struct loaded {
    struct loaded *next;
    char *source;
    void *handle;
    cpu_program program;
} loaded;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static loaded *programs;   /* guarded by lock */
static loaded *forgotten;  /* kept reachable: their programs stay valid */
static atomic_uint temp_counter;

/* ---- small helpers ---- */

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- running the compiler ---- */

/* argv[0] from $CC split at blank space, then `extra`; NULL-terminated. */
typedef struct command {
    char *words;
    char *argv[64];
    int argc;
} command;

static bool command_init(command *c, const char *cc) {
    memset(c, 0, sizeof *c);
    c->words = strdup(cc);
    if (!c->words) return false;
    for (char *save = NULL, *w = strtok_r(c->words, " \t\n", &save); w && c->argc < 40;
         w = strtok_r(NULL, " \t\n", &save))
        c->argv[c->argc++] = w;
    return c->argc > 0;
}

static void command_add(command *c, const char *arg) {
    if (c->argc < 62) c->argv[c->argc++] = (char *)arg;
    c->argv[c->argc] = NULL;
}

/* Runs argv without a shell; *output gets its stdout and stderr (malloc'd,
 * NUL-terminated). Returns the exit status, or -1 when it could not run. */
static int run_command(char *const *argv, char **output) {
    *output = NULL;
    int fds[2];
    if (pipe(fds) != 0) return -1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
    posix_spawn_file_actions_adddup2(&actions, fds[1], 2);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addclose(&actions, fds[1]);
    pid_t pid;
    int err = posix_spawnp(&pid, argv[0], &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    size_t len = 0, cap = 1024;
    char *text = malloc(cap);
    for (;;) {
        char chunk[4096];
        ssize_t n = read(fds[0], chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (text && len + (size_t)n + 1 > cap) {
            while (len + (size_t)n + 1 > cap) cap *= 2;
            char *grown = realloc(text, cap);
            if (!grown) {
                free(text);
                text = NULL;
            } else {
                text = grown;
            }
        }
        if (text) {
            memcpy(text + len, chunk, (size_t)n);
            len += (size_t)n;
        }
    }
    close(fds[0]);
    if (text) text[len] = '\0';
    *output = text;
    if (err != 0) return -1;
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The compiler in use: $CC or "cc", and its identity (first line of
 * --version), found once per $CC value. Guarded by lock. */
static char compiler_name[512];
static char compiler_identity[512];
static bool compiler_known, compiler_works, compiler_warned;

static const char *current_cc(void) {
    const char *cc = getenv("CC");
    return cc && *cc ? cc : "cc";
}

static porta_status *find_compiler(void) {
    const char *cc = current_cc();
    if (!compiler_known || strcmp(cc, compiler_name) != 0) {
        snprintf(compiler_name, sizeof compiler_name, "%s", cc);
        compiler_known = true;
        compiler_works = false;
        command c;
        if (command_init(&c, cc)) {
            command_add(&c, "--version");
            char *out = NULL;
            if (run_command(c.argv, &out) == 0 && out) {
                size_t line = strcspn(out, "\n");
                snprintf(compiler_identity, sizeof compiler_identity, "%.*s", (int)line, out);
                compiler_works = true;
            }
            free(out);
        }
        free(c.words);
    }
    if (compiler_works) return NULL;
    if (!compiler_warned) {
        compiler_warned = true;
        fprintf(stderr,
                "porta: no working C compiler ('%s' from $CC or cc): fused kernels run as "
                "separate ops\n",
                compiler_name);
    }
    return porta_error(PORTA_ERR_UNAVAILABLE, "no working C compiler ('%s')", compiler_name);
}

/* ---- the disk cache ---- */

/* -march=native builds for this CPU: a cache shared between machines (a
 * network home) must not hand one machine's object to another, so the
 * CPU's model and feature flags are part of every entry's name. */
static uint64_t cpu_identity(void) {
    static uint64_t identity;
    static bool known;
    if (known) return identity;
    known = true;
    identity = 0xcbf29ce484222325ull;
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return identity;
    char line[8192];
    bool model = false, flags = false;
    while ((!model || !flags) && fgets(line, sizeof line, f)) {
        if (!model && strncmp(line, "model name", 10) == 0) {
            identity = rt_hash_text(identity, line);
            model = true;
        } else if (!flags && strncmp(line, "flags", 5) == 0) {
            identity = rt_hash_text(identity, line);
            flags = true;
        }
    }
    fclose(f);
    return identity;
}

/* Loads a compiled kernel and checks it is the one asked for. */
static bool load_object(const char *path, uint64_t key, void **handle, cpu_program *program,
                        char *why, size_t why_cap) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, why_cap, "%s", dlerror());
        return false;
    }
    const uint64_t *stored = dlsym(h, "kir_key");
    void *main_fn = dlsym(h, "kir_main");
    if (!stored || !main_fn || *stored != key) {
        snprintf(why, why_cap, "%s: %s", path,
                 !stored || !main_fn ? "a kernel symbol is missing" : "it holds another kernel");
        dlclose(h);
        return false;
    }
    /* dlsym returns data pointers; POSIX guarantees functions convert */
    memcpy(&program->main, &main_fn, sizeof main_fn);
    void *tile_fn = dlsym(h, "kir_tile");
    program->tile = NULL;
    if (tile_fn) memcpy(&program->tile, &tile_fn, sizeof tile_fn);
    *handle = h;
    return true;
}

static porta_status *write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return porta_error(PORTA_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    size_t len = strlen(text);
    bool ok = core_fault_fwrite(text, len, f) == len;
    ok &= fclose(f) == 0;
    if (!ok) {
        unlink(path);
        return porta_error(PORTA_ERR_IO, "cannot write %s", path);
    }
    return NULL;
}

/* Compiles `source` into `so_path` via unique temp files in the same
 * directory, loads the result, then renames source and object into place. */
static porta_status *compile_object(const char *source, const char *base, uint64_t key,
                                    void **handle, cpu_program *program) {
    char tmp_c[4200], tmp_so[4200], final_c[4200], final_so[4200];
    unsigned serial = atomic_fetch_add(&temp_counter, 1);
    snprintf(tmp_c, sizeof tmp_c, "%s.tmp%ld.%u.c", base, (long)getpid(), serial);
    snprintf(tmp_so, sizeof tmp_so, "%s.tmp%ld.%u.so", base, (long)getpid(), serial);
    snprintf(final_c, sizeof final_c, "%s.c", base);
    snprintf(final_so, sizeof final_so, "%s.so", base);
    PORTA_TRY(CORE_FAULT_CHECK(CORE_FAULT_BUILD, PORTA_ERR_UNSUPPORTED, "compiling a kernel"));
    PORTA_TRY(write_file(tmp_c, source));

    command c;
    if (!command_init(&c, compiler_name)) {
        unlink(tmp_c);
        return porta_error(PORTA_ERR_UNAVAILABLE, "no working C compiler ('%s')", compiler_name);
    }
    for (int i = 0; i < FLAG_COUNT; i++) command_add(&c, compile_flags[i]);
    command_add(&c, "-o");
    command_add(&c, tmp_so);
    command_add(&c, tmp_c);
    command_add(&c, "-lm");
    char *out = NULL;
    int rc = run_command(c.argv, &out);
    free(c.words);
    if (rc != 0) {
        porta_status *status =
            porta_error(PORTA_ERR_UNSUPPORTED, "compiling kernel %s failed (%s, status %d): %.2000s",
                        tmp_c, compiler_name, rc, out ? out : "");
        free(out);
        unlink(tmp_so);
        return status; /* the source stays for reading */
    }
    free(out);
    porta_status *sealed = rt_kernel_cache_seal(tmp_so);
    if (sealed) {
        unlink(tmp_so);
        unlink(tmp_c);
        return sealed;
    }
    char why[512];
    if (!load_object(tmp_so, key, handle, program, why, sizeof why)) {
        unlink(tmp_so);
        unlink(tmp_c);
        return porta_error(PORTA_ERR_UNSUPPORTED, "loading a compiled kernel failed: %s", why);
    }
    /* Loaded already: a failed rename only costs the next process a compile. */
    if (rename(tmp_so, final_so) != 0) unlink(tmp_so);
    if (rename(tmp_c, final_c) != 0) unlink(tmp_c);
    return NULL;
}

/* ---- the lookup ---- */

/* A kernel that cannot be built for a reason of this machine (no room to
 * write it, ...) is unavailable, so its ops run eagerly rather than the
 * flush failing. */
static porta_status *unavailable(porta_status *status) {
    if (!status || porta_status_code(status) != PORTA_ERR_IO) return status;
    porta_status *replaced =
        porta_error(PORTA_ERR_UNAVAILABLE, "kernel compiler: %s", porta_status_message(status));
    porta_status_free(status);
    return replaced;
}

/* Compile failures are bugs of the renderer or the compiler setup: said
 * once on stderr, since the scheduler quietly runs such ops eagerly. */
static void warn_compile_failure(const porta_status *status) {
    static bool warned;
    if (warned || porta_status_code(status) != PORTA_ERR_UNSUPPORTED) return;
    warned = true;
    fprintf(stderr, "porta: a fused kernel could not be built; its ops run separately: %.500s\n",
            porta_status_message(status));
}

static void describe(cpu_program *program, const kir_kernel *kernel, uint64_t hash) {
    program->hash = hash;
    program->rank = kernel->rank;
    program->outer_rank = kernel->outer_rank;
    int cost = 0;
    for (int i = 0; i < kernel->value_count; i++)
        cost += kernel->values[i].kind == KIR_LOAD ? 0 : kernel->values[i].kind == KIR_UNARY ? 4 : 1;
    program->cost = cost > 0 ? cost : 1;
}

static porta_status *find_or_build(const kir_kernel *kernel, const char *source, uint64_t hash,
                                   const cpu_program **out) {
    for (loaded *e = programs; e; e = e->next) {
        if (e->program.hash == hash && strcmp(e->source, source) == 0) {
            compiler_count(COUNTER_KERNEL_MEMORY_HITS, 1);
            *out = &e->program;
            return NULL;
        }
    }
    PORTA_TRY(find_compiler());
    double start = now_seconds();
    char dir[4096];
    PORTA_TRY(unavailable(rt_kernel_cache_dir("kernels", dir, sizeof dir)));
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
    a = rt_hash_text(rt_hash_text(a, source), compiler_identity);
    b = rt_hash_text(rt_hash_text(b, compiler_identity), source);
    for (int i = 0; i < FLAG_COUNT; i++) {
        a = rt_hash_text(a, compile_flags[i]);
        b = rt_hash_text(b, compile_flags[i]);
    }
    a = rt_hash_text(a, "sealed"); /* entries from before seals are never read */
    a ^= cpu_identity();
    b = (b ^ cpu_identity()) * 0x100000001b3ull;
    char base[4150], so_path[4200];
    snprintf(base, sizeof base, "%s/%016llx%016llx", dir, (unsigned long long)a,
             (unsigned long long)b);
    snprintf(so_path, sizeof so_path, "%s.so", base);

    loaded *e = calloc(1, sizeof *e);
    if (!e) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory caching a kernel");
    e->source = strdup(source);
    if (!e->source) {
        free(e);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "out of memory caching a kernel");
    }
    char why[512];
    bool from_disk = rt_kernel_cache_check(so_path, NULL, NULL) &&
                     load_object(so_path, hash, &e->handle, &e->program, why, sizeof why);
    if (!from_disk) {
        porta_status *status =
            unavailable(compile_object(source, base, hash, &e->handle, &e->program));
        if (status) {
            warn_compile_failure(status);
            free(e->source);
            free(e);
            return status;
        }
    }
    compiler_count(from_disk ? COUNTER_KERNEL_DISK_HITS : COUNTER_KERNELS_COMPILED, 1);
    compiler_count_compile_seconds(now_seconds() - start);
    describe(&e->program, kernel, hash);
    e->next = programs;
    programs = e;
    *out = &e->program;
    return NULL;
}

porta_status *cpu_jit_program(const kir_kernel *kernel, const cpu_program **out) {
    if (!out) return porta_error(PORTA_ERR_INVALID_ARGUMENT, "out is NULL");
    char *source = NULL;
    PORTA_TRY(kir_render_c(kernel, &source));
    uint64_t hash = kir_hash(kernel);
    pthread_mutex_lock(&lock);
    porta_status *status = find_or_build(kernel, source, hash, out);
    pthread_mutex_unlock(&lock);
    free(source);
    return status;
}

void cpu_jit_forget_loaded(void) {
    pthread_mutex_lock(&lock);
    while (programs) {
        loaded *e = programs;
        programs = e->next;
        e->next = forgotten;
        forgotten = e;
    }
    pthread_mutex_unlock(&lock);
}
