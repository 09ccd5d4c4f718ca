/* One attempt of porta train: the script started in a process group of its
 * own (under mpirun with --ranks), with the environment that picks its
 * device and switches its agent on; then watched until it ends, hangs (no
 * step reported for hang_seconds) or the supervisor is interrupted. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd_train.h"

/* How long a run stopped by SIGTERM (a hang, a move) has to end before it
 * is killed. */
#define STOP_GRACE_SECONDS 5.0

/* The signal that interrupted the supervisor, forwarded to the attempt. */
static volatile sig_atomic_t interrupted;
static volatile pid_t running_group;

static void forward(int signal_number) {
    interrupted = signal_number;
    if (running_group > 0) kill(-running_group, signal_number);
}

void train_read_progress(const char *path, long *step, long *checkpoint) {
    *step = *checkpoint = -1;
    char text[256];
    FILE *f = fopen(path, "r");
    if (!f) return;
    size_t length = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[length] = '\0';
    /* {"step": 12, "checkpoint": 10, "pid": 123}; "checkpoint": null before one */
    const char *at = strstr(text, "\"step\":");
    if (at) *step = strtol(at + 7, NULL, 10);
    at = strstr(text, "\"checkpoint\":");
    if (at && strncmp(at + 13, " null", 5)) *checkpoint = strtol(at + 13, NULL, 10);
}

static void set_environment(const train_attempt *a) {
    char number[64];
    setenv("PORTA_VISIBLE_DEVICES", a->device->visible, 1);
    setenv("PORTA_TRAIN_CHECKPOINT_DIR", a->checkpoint_dir, 1);
    snprintf(number, sizeof number, "%d", a->checkpoint_every);
    setenv("PORTA_TRAIN_CHECKPOINT_EVERY", number, 1);
    snprintf(number, sizeof number, "%.17g", a->checkpoint_seconds);
    setenv("PORTA_TRAIN_CHECKPOINT_SECONDS", number, 1);
    setenv("PORTA_TRAIN_PROGRESS", a->progress_path, 1);
    if (!a->keep_faults) unsetenv("PORTA_FAULTS");
}

/* In the child: the command, or mpirun -np R and the command. */
static void exec_command(const train_attempt *a) {
    setpgid(0, 0);
    set_environment(a);
    int words = 0;
    while (a->command[words]) words++;
    char **argv = calloc((size_t)words + 4, sizeof *argv);
    if (!argv) {
        fprintf(stderr, "porta train: out of memory starting the script\n");
        _exit(127);
    }
    char ranks[16];
    int used = 0;
    if (a->ranks > 0) {
        snprintf(ranks, sizeof ranks, "%d", a->ranks);
        argv[used++] = "mpirun";
        argv[used++] = "-np";
        argv[used++] = ranks;
    }
    for (int i = 0; i < words; i++) argv[used++] = a->command[i];
    execvp(argv[0], argv);
    fprintf(stderr, "porta train: cannot run %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

static void sleep_seconds(double seconds) {
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    nanosleep(&t, NULL);
}

int train_run_attempt(const train_attempt *a, train_outcome *outcome) {
    *outcome = (train_outcome){.step = -1, .checkpoint = -1};
    unlink(a->progress_path); /* the last attempt's steps are not this one's */
    struct sigaction action = {0}, old_int, old_term;
    action.sa_handler = forward;
    sigemptyset(&action.sa_mask);
    sigaction(SIGINT, &action, &old_int);
    sigaction(SIGTERM, &action, &old_term);
    fflush(NULL);
    double started = cli_now_seconds();
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "porta train: cannot start the script: %s\n", strerror(errno));
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return 1;
    }
    if (pid == 0) exec_command(a);
    setpgid(pid, pid); /* also here: no window in which a kill misses the group */
    running_group = pid;
    double last_progress = started;
    long last_step = -1, last_checkpoint = -1;
    int status = 0;
    bool hung = false, moved = false;
    double stopping_since = 0; /* when SIGTERM was sent; 0: not yet */
    for (;;) {
        pid_t done = waitpid(pid, &status, WNOHANG);
        if (done == pid) break;
        if (done < 0 && errno != EINTR) {
            fprintf(stderr, "porta train: waiting for the script: %s\n", strerror(errno));
            break;
        }
        long step, checkpoint;
        train_read_progress(a->progress_path, &step, &checkpoint);
        if (step != last_step) {
            last_step = step;
            last_progress = cli_now_seconds();
        }
        if (checkpoint > last_checkpoint) {
            last_checkpoint = checkpoint;
            if (!stopping_since && a->at_checkpoint && a->at_checkpoint(a->context, checkpoint))
                moved = true;
        }
        if (!stopping_since && !moved && cli_now_seconds() - last_progress > a->hang_seconds) hung = true;
        /* SIGTERM first: mpirun then ends its ranks, which run in process
         * groups of their own; whatever is left after STOP_GRACE_SECONDS
         * is killed. */
        if ((hung || moved) && !stopping_since) {
            stopping_since = cli_now_seconds();
            kill(-pid, SIGTERM);
        } else if (stopping_since && cli_now_seconds() - stopping_since > STOP_GRACE_SECONDS) {
            kill(-pid, SIGKILL);
        }
        sleep_seconds(0.05);
    }
    kill(-pid, SIGKILL); /* anything the script left behind in its group */
    running_group = 0;
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    outcome->seconds = cli_now_seconds() - started;
    train_read_progress(a->progress_path, &outcome->step, &outcome->checkpoint);
    if (interrupted) {
        outcome->end = TRAIN_STOPPED;
        outcome->status = interrupted;
    } else if (hung) {
        outcome->end = TRAIN_HUNG;
    } else if (moved && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
        outcome->end = TRAIN_MOVED; /* (exit status 0: it finished before it was stopped) */
    } else if (WIFSIGNALED(status)) {
        outcome->end = TRAIN_KILLED;
        outcome->status = WTERMSIG(status);
    } else {
        int code = WEXITSTATUS(status);
        outcome->status = code;
        /* mpirun reports a rank ended by signal S as exit status 128 + S */
        outcome->end = code == 0                        ? TRAIN_DONE
                       : code == TRAIN_DEVICE_LOST_EXIT ? TRAIN_DEVICE_LOST
                       : code > 128 && a->ranks > 0     ? TRAIN_KILLED
                                                        : TRAIN_FAILED;
        if (outcome->end == TRAIN_KILLED) outcome->status = code - 128;
    }
    return 0;
}
