/* Files the user names: an output replaces a regular file or follows a
 * symbolic link to one, and refuses (leaving it as it is) a directory, a
 * FIFO or a device node; an input that is not a regular file is refused
 * at once, not waited for (opening a FIFO waits for a writer). */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "core/output_file.h"
#include "io/file_map.h"
#include "porta_io.h"
#include "porta_model.h"
#include "test.h"

typedef struct place {
    char dir[512];
    char path[8][700]; /* names inside dir */
} place;

static bool place_begin(place *p) {
    const char *base = getenv("TMPDIR");
    snprintf(p->dir, sizeof p->dir, "%s/porta_output_XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(p->dir)) {
        test_fail(__FILE__, __LINE__, "cannot make a directory: %s", strerror(errno));
        return false;
    }
    return true;
}

static const char *in(place *p, int slot, const char *name) {
    snprintf(p->path[slot], sizeof p->path[slot], "%s/%s", p->dir, name);
    return p->path[slot];
}

static bool holds(const char *path, const char *text) {
    char buffer[256] = {0};
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    size_t got = fread(buffer, 1, sizeof buffer - 1, f);
    fclose(f);
    return got == strlen(text) && !memcmp(buffer, text, got);
}

static bool write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fputs(text, f) >= 0;
    return !fclose(f) && ok;
}

static mode_t kind_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mode & S_IFMT : 0;
}

TEST(test_output_file_creates_and_replaces_a_regular_file) {
    place p;
    if (!place_begin(&p)) return;
    const char *path = in(&p, 0, "out.txt");
    CHECK_OK(core_output_file(path, "test output", "first", 5));
    CHECK(holds(path, "first"));
    CHECK(chmod(path, 0640) == 0);
    CHECK_OK(porta_file_write(path, "second", 6));
    CHECK(holds(path, "second"));
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 07777) == 0640);
    CHECK(test_count_entries(p.dir) == 1); /* no temporary file left */
    test_remove_tree(p.dir);
}

/* One small tensor saved to `path`, as porta run writes its outputs. */
static porta_status *save_one(const char *path) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_full(test_cpu(), PORTA_F32, 1, (int64_t[]){2}, 1.5, &t);
    if (!status) status = porta_safetensors_save(path, &(porta_safetensors_entry){"t", t}, 1, NULL, 0);
    if (t) porta_tensor_release(t);
    return status;
}

static bool is_safetensors(const char *path) {
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_open(path, &file);
    bool ok = !status && porta_safetensors_count(file) == 1;
    porta_status_free(status);
    porta_safetensors_close(file);
    return ok;
}

/* The link stays a link; the file it leads to (relative to the link's own
 * folder, through a second link) gets the new contents. */
TEST(test_output_file_follows_symbolic_links) {
    place p;
    if (!place_begin(&p)) return;
    CHECK(mkdir(in(&p, 0, "sub"), 0755) == 0);
    const char *target = in(&p, 1, "sub/target.safetensors");
    CHECK(write_text(target, "old"));
    CHECK(symlink("target.safetensors", in(&p, 2, "sub/inner")) == 0);
    const char *outer = in(&p, 3, "outer");
    CHECK(symlink("sub/inner", outer) == 0);
    CHECK_OK(save_one(outer));
    CHECK(kind_of(outer) == S_IFLNK && kind_of(p.path[2]) == S_IFLNK);
    CHECK(kind_of(target) == S_IFREG && is_safetensors(target));
    CHECK(test_count_entries(in(&p, 4, "sub")) == 2 && test_count_entries(p.dir) == 2);
    /* A link to nothing yet: the file is made where it points. */
    const char *dangling = in(&p, 5, "dangling");
    CHECK(symlink("sub/made.safetensors", dangling) == 0);
    CHECK_OK(save_one(dangling));
    CHECK(kind_of(dangling) == S_IFLNK && is_safetensors(in(&p, 6, "sub/made.safetensors")));
    /* A loop of links is refused. */
    const char *loop = in(&p, 7, "loop");
    CHECK(symlink("loop", loop) == 0);
    CHECK_ERR(save_one(loop), PORTA_ERR_IO, "symbolic links in a row");
    test_remove_tree(p.dir);
}

/* What the name stands for survives, named in the message with its kind. */
static void check_refused(const char *path, const char *kind) {
    mode_t before = kind_of(path);
    porta_status *status = save_one(path);
    CHECK_MSG(status && porta_status_code(status) == PORTA_ERR_IO &&
                  strstr(porta_status_message(status), path) &&
                  strstr(porta_status_message(status), kind),
              "%s: %s", path, status ? porta_status_message(status) : "written");
    porta_status_free(status);
    CHECK_MSG(kind_of(path) == before, "%s changed kind", path);
}

TEST(test_output_file_refuses_fifos_directories_and_devices) {
    place p;
    if (!place_begin(&p)) return;
    const char *fifo = in(&p, 0, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    check_refused(fifo, "got a FIFO");
    CHECK(mkdir(in(&p, 1, "folder"), 0755) == 0);
    check_refused(p.path[1], "got a directory");
    /* Through a link: the link and the FIFO both stay. */
    CHECK(symlink("fifo", in(&p, 2, "to-fifo")) == 0);
    check_refused(p.path[2], "to-fifo -> ");
    CHECK(kind_of(p.path[2]) == S_IFLNK && kind_of(fifo) == S_IFIFO);
    int expected = 3;
    if (geteuid() == 0) {
        /* A copy of /dev/null: a device node that renaming over destroys. */
        const char *device = in(&p, 3, "null");
        CHECK(mknod(device, S_IFCHR | 0666, makedev(1, 3)) == 0);
        check_refused(device, "got a character device");
        expected++;
    } else {
        printf("     (mknod of a character device needs root; that case skipped)\n");
    }
    /* The profiler's trace is such a file too. */
    CHECK_OK(porta_profiler_start());
    porta_status *stopped = porta_profiler_stop(fifo);
    CHECK_MSG(stopped && strstr(porta_status_message(stopped), "got a FIFO"), "%s",
              stopped ? porta_status_message(stopped) : "written");
    porta_status_free(stopped);
    CHECK(kind_of(fifo) == S_IFIFO);
    /* Nothing was left beside them. */
    CHECK_MSG(test_count_entries(p.dir) == expected, "%d entries, expected %d", test_count_entries(p.dir), expected);
    test_remove_tree(p.dir);
}

TEST(test_output_file_failures_leave_the_old_file) {
    place p;
    if (!place_begin(&p)) return;
    const char *path = in(&p, 0, "kept.txt");
    CHECK(write_text(path, "kept"));
    core_output out;
    CHECK_OK(core_output_open(path, "test output", &out));
    CHECK_OK(core_output_write(&out, "partial", 7));
    porta_status *status = core_output_close(
        &out, porta_error(PORTA_ERR_INTERNAL, "the writer failed half way"));
    CHECK_ERR(status, PORTA_ERR_INTERNAL, "half way");
    CHECK(holds(path, "kept") && test_count_entries(p.dir) == 1);
    CHECK_ERR(core_output_file(in(&p, 1, "no/such/folder/x"), "test output", "x", 1),
              PORTA_ERR_IO, "cannot create");
    CHECK_ERR(core_output_file("", "test output", "x", 1), PORTA_ERR_INVALID_ARGUMENT,
              "expected a file name");
    test_remove_tree(p.dir);
}

static void on_alarm(int signal) { (void)signal; }

/* A 2-second alarm that interrupts a blocking open (no SA_RESTART), so a
 * reader that waits on a FIFO fails the test instead of hanging it. */
static void alarm_begin(struct sigaction *saved) {
    struct sigaction interrupt = {.sa_handler = on_alarm};
    sigaction(SIGALRM, &interrupt, saved);
    alarm(2);
}

static void alarm_end(const struct sigaction *saved) {
    alarm(0);
    sigaction(SIGALRM, saved, NULL);
}

TEST(test_input_file_that_is_no_regular_file_is_refused_at_once) {
    place p;
    if (!place_begin(&p)) return;
    const char *fifo = in(&p, 0, "fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    porta_safetensors *file = NULL;
    porta_model *model = NULL;
    struct sigaction saved;
    alarm_begin(&saved);
    porta_status *opened = porta_safetensors_open(fifo, &file);
    alarm_end(&saved);
    alarm_begin(&saved);
    porta_status *loaded = porta_model_load(fifo, &model);
    alarm_end(&saved);
    CHECK_ERR(opened, PORTA_ERR_IO, "expected a regular file, got a FIFO");
    CHECK_ERR(loaded, PORTA_ERR_IO, "expected a regular file, got a FIFO");
    CHECK(file == NULL && model == NULL);
    CHECK_ERR(porta_model_load(p.dir, &model), PORTA_ERR_IO,
              "expected a regular file, got a directory");
    int fd = -1;
    size_t size = 0;
    CHECK_ERR(io_file_open("/dev/null", "test input", &fd, &size), PORTA_ERR_IO,
              "test input /dev/null: expected a regular file, got a character device");
    test_remove_tree(p.dir);
}
