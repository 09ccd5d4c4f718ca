/* The progress line: drawn on a terminal (a pseudo-terminal here) once the
 * work has taken longer than its delay, never on a pipe or for short work,
 * and PORTA_PROGRESS=0/1 overriding the terminal test. */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "porta_progress.h"
#include "test.h"

/* Everything readable from fd within a short wait, NUL-terminated. */
static void drain(int fd, char *text, size_t cap) {
    size_t n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (n + 1 < cap && poll(&p, 1, 100) > 0 && (p.revents & POLLIN)) {
        ssize_t got = read(fd, text + n, cap - 1 - n);
        if (got <= 0) break;
        n += (size_t)got;
    }
    text[n] = '\0';
}

/* A pseudo-terminal: *master to read what is written to *terminal. */
static bool open_terminal(int *master, int *terminal) {
    *master = posix_openpt(O_RDWR | O_NOCTTY);
    if (*master < 0 || grantpt(*master) || unlockpt(*master)) return false;
    const char *name = ptsname(*master);
    *terminal = name ? open(name, O_RDWR | O_NOCTTY) : -1;
    return *terminal >= 0;
}

/* Runs a reporter of three steps on `fd`, with `delay_ns` before the first line. */
static void report(int fd, uint64_t delay_ns) {
    porta_progress p;
    porta_progress_begin_on(&p, fd, "testing progress", 3);
    p.delay_ns = delay_ns;
    for (int i = 0; i < 3; i++) porta_progress_advance(&p, 1);
    porta_progress_end(&p);
}

/* Sets PORTA_PROGRESS (NULL unsets) and returns the value it had (static copy). */
static const char *set_progress_env(const char *value) {
    static char saved[32];
    const char *old = getenv("PORTA_PROGRESS");
    bool had = old != NULL;
    if (had) snprintf(saved, sizeof saved, "%s", old);
    if (value)
        setenv("PORTA_PROGRESS", value, 1);
    else
        unsetenv("PORTA_PROGRESS");
    return had ? saved : NULL;
}

TEST(test_progress_drawn_on_a_terminal_only) {
    const char *old = set_progress_env(NULL);
    int master, terminal;
    if (!open_terminal(&master, &terminal)) {
        test_fail(__FILE__, __LINE__, "no pseudo-terminal could be opened");
        set_progress_env(old);
        return;
    }
    char text[2048];
    report(terminal, 0);
    drain(master, text, sizeof text);
    CHECK_MSG(strstr(text, "porta: testing progress [") && strstr(text, "3/3"),
              "on a terminal, expected a progress line ending at 3/3, got \"%s\"", text);
    CHECK_MSG(strchr(text, '\n') != NULL, "the finished line ends with a newline: \"%s\"", text);

    /* short work: quiet */
    report(terminal, PORTA_PROGRESS_DELAY_NS);
    drain(master, text, sizeof text);
    CHECK_MSG(text[0] == '\0', "work shorter than the delay drew \"%s\"", text);

    /* PORTA_PROGRESS=0 silences a terminal */
    set_progress_env("0");
    report(terminal, 0);
    drain(master, text, sizeof text);
    CHECK_MSG(text[0] == '\0', "PORTA_PROGRESS=0 still drew \"%s\"", text);

    int pipe_fds[2];
    CHECK(pipe(pipe_fds) == 0);
    /* a pipe: quiet, unless PORTA_PROGRESS=1 */
    set_progress_env(NULL);
    report(pipe_fds[1], 0);
    drain(pipe_fds[0], text, sizeof text);
    CHECK_MSG(text[0] == '\0', "a pipe got \"%s\"", text);
    set_progress_env("1");
    report(pipe_fds[1], 0);
    drain(pipe_fds[0], text, sizeof text);
    CHECK_MSG(strstr(text, "3/3") != NULL, "PORTA_PROGRESS=1 on a pipe drew \"%s\"", text);

    set_progress_env(old);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    close(terminal);
    close(master);
}

TEST(test_progress_unknown_total_counts_steps) {
    const char *old = set_progress_env("1");
    int pipe_fds[2];
    CHECK(pipe(pipe_fds) == 0);
    porta_progress p;
    porta_progress_begin_on(&p, pipe_fds[1], "counting", 0);
    p.delay_ns = 0;
    porta_progress_advance(&p, 7);
    porta_progress_end(&p);
    char text[512];
    drain(pipe_fds[0], text, sizeof text);
    CHECK_MSG(strstr(text, "porta: counting 7 ") != NULL, "got \"%s\"", text);
    set_progress_env(old);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
}
