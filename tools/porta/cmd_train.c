/* porta train [options] -- COMMAND...: runs a training script under
 * supervision (docs/train.md). The script's in-process agent checkpoints it;
 * when an attempt ends with a lost device, is killed, or hangs, the next
 * attempt resumes from the last checkpoint on the next device of --devices
 * (with one rank fewer when an MPI rank died), at most --max-restarts
 * times. Every decision is one stderr line starting "porta train:". */
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_train.h"

typedef struct train_options {
    const char *devices, *checkpoint_dir;
    int checkpoint_every, max_restarts, ranks;
    double checkpoint_seconds, hang_seconds;
    bool move_when_cheaper;
    char *const *command;
} train_options;

static int parse_options(int argc, char **argv, train_options *o) {
    *o = (train_options){.devices = "all", .checkpoint_dir = "porta-train.ckpt",
                         .max_restarts = 3, .checkpoint_seconds = 60, .hang_seconds = 600};
    bool every = false, seconds = false;
    int a = 1;
    for (; a < argc && strcmp(argv[a], "--"); a++) {
        const char *arg = argv[a];
        bool known = !strcmp(arg, "--devices") || !strcmp(arg, "--checkpoint-every") ||
                     !strcmp(arg, "--checkpoint-seconds") || !strcmp(arg, "--checkpoint-dir") ||
                     !strcmp(arg, "--max-restarts") || !strcmp(arg, "--ranks") ||
                     !strcmp(arg, "--hang-seconds") || !strcmp(arg, "--move-when");
        if (!known) return cli_usage("train", "unexpected argument '%s' (the script's command "
                                              "comes after '--')", arg);
        if (a + 1 >= argc || !strcmp(argv[a + 1], "--"))
            return cli_usage("train", "%s needs a value", arg);
        const char *value = argv[++a];
        int code = 0;
        if (!strcmp(arg, "--devices")) o->devices = value;
        else if (!strcmp(arg, "--checkpoint-dir")) o->checkpoint_dir = value;
        else if (!strcmp(arg, "--checkpoint-every"))
            every = true, code = cli_count("train", arg, value, 1, &o->checkpoint_every);
        else if (!strcmp(arg, "--checkpoint-seconds"))
            seconds = true, code = cli_seconds("train", arg, value, &o->checkpoint_seconds);
        else if (!strcmp(arg, "--max-restarts"))
            code = cli_count("train", arg, value, 0, &o->max_restarts);
        else if (!strcmp(arg, "--ranks")) code = cli_count("train", arg, value, 1, &o->ranks);
        else if (!strcmp(arg, "--move-when")) {
            if (strcmp(value, "cheaper"))
                return cli_usage("train", "--move-when expects 'cheaper', got '%s'", value);
            o->move_when_cheaper = true;
        }
        else code = cli_seconds("train", arg, value, &o->hang_seconds);
        if (code) return code;
    }
    if (every && seconds)
        return cli_usage("train", "--checkpoint-every and --checkpoint-seconds exclude each "
                                  "other: give one");
    if (every) o->checkpoint_seconds = 0;
    if (o->move_when_cheaper && !getenv("PORTA_PRICES"))
        return cli_usage("train", "--move-when cheaper needs a price file in $PORTA_PRICES "
                                  "(docs/compare.md), and none is set");
    if (a >= argc) return cli_usage("train", "missing '--' and the script's command after it");
    if (a + 1 >= argc) return cli_usage("train", "missing the script's command after '--'");
    o->command = argv + a + 1;
    return 0;
}

static const char *end_reason(const train_outcome *out, char *text, size_t cap) {
    switch (out->end) {
    case TRAIN_DONE: snprintf(text, cap, "finished (exit status 0)"); break;
    case TRAIN_DEVICE_LOST:
        snprintf(text, cap, "lost its device (exit status %d)", out->status);
        break;
    case TRAIN_KILLED: snprintf(text, cap, "killed by signal %d", out->status); break;
    case TRAIN_HUNG: snprintf(text, cap, "hung (no optimizer step for the --hang-seconds)"); break;
    case TRAIN_FAILED: snprintf(text, cap, "failed (exit status %d)", out->status); break;
    case TRAIN_STOPPED: snprintf(text, cap, "stopped by signal %d", out->status); break;
    case TRAIN_MOVED: snprintf(text, cap, "stopped to move to a cheaper device"); break;
    }
    return text;
}

/* The exit status the supervisor ends with after a last attempt. */
static int final_status(const train_outcome *out) {
    if (out->end == TRAIN_DONE) return 0;
    if (out->end == TRAIN_FAILED || out->end == TRAIN_DEVICE_LOST) return out->status;
    if (out->end == TRAIN_KILLED || out->end == TRAIN_STOPPED) return 128 + out->status;
    return 1;
}

static bool is_directory(const char *path) {
    struct stat info;
    return !stat(path, &info) && S_ISDIR(info.st_mode);
}

/* What --move-when cheaper needs to know at a checkpoint. */
typedef struct move_context {
    const train_device *devices;
    int count, current, target;
    const bool *failed;
} move_context;

static bool move_at_checkpoint(void *context, long checkpoint) {
    move_context *m = context;
    m->target = train_cheaper_device(m->devices, m->count, m->current, checkpoint, m->failed);
    return m->target >= 0;
}

static void print_command(char *const *command) {
    for (int i = 0; command[i]; i++) fprintf(stderr, "%s%s", i ? " " : "", command[i]);
}

int porta_cmd_train(int argc, char **argv) {
    train_options o;
    int code = parse_options(argc, argv, &o);
    if (code) return code;
    train_device devices[CLI_MAX_DEVICES];
    int device_count;
    if ((code = train_devices(o.devices, devices, &device_count))) return code;
    if (mkdir(o.checkpoint_dir, 0777) && !is_directory(o.checkpoint_dir)) {
        fprintf(stderr, "porta train: --checkpoint-dir %s: expected a directory (made if "
                        "missing), got something else or no permission\n", o.checkpoint_dir);
        return 2;
    }
    char progress[PATH_MAX];
    snprintf(progress, sizeof progress, "%s/progress.json", o.checkpoint_dir);
    int which = 0, ranks = o.ranks, restarts = 0;
    long checkpoint = -1;
    bool failed[CLI_MAX_DEVICES] = {false};
    move_context move = {.devices = devices, .count = device_count, .failed = failed};
    train_outcome out;
    /* The figures first (a device without a stored measurement is measured
     * now, not at the first checkpoint), with the reason to stay or not. */
    if (o.move_when_cheaper) train_cheaper_device(devices, device_count, 0, -1, failed);
    for (int attempt = 0;; attempt++) {
        move.current = which;
        train_attempt a = {.command = o.command, .ranks = ranks, .device = &devices[which],
                           .checkpoint_dir = o.checkpoint_dir, .progress_path = progress,
                           .checkpoint_every = o.checkpoint_every,
                           .checkpoint_seconds = o.checkpoint_seconds,
                           .hang_seconds = o.hang_seconds,
                           .keep_faults = which == 0,
                           .at_checkpoint = o.move_when_cheaper ? move_at_checkpoint : NULL,
                           .context = &move};
        fprintf(stderr, "porta train: attempt %d on %s (PORTA_VISIBLE_DEVICES=%s)", attempt + 1,
                devices[which].label, devices[which].visible);
        if (ranks) fprintf(stderr, " with %d rank%s", ranks, ranks == 1 ? "" : "s");
        fprintf(stderr, ": ");
        print_command(o.command);
        fprintf(stderr, "\n");
        if (train_run_attempt(&a, &out)) return 1;
        if (out.checkpoint > checkpoint) checkpoint = out.checkpoint;
        char reason[160];
        fprintf(stderr, "porta train: attempt %d %s after %.1f s, ", attempt + 1,
                end_reason(&out, reason, sizeof reason), out.seconds);
        if (out.step < 0) fprintf(stderr, "before any step");
        else fprintf(stderr, "at step %ld", out.step);
        if (checkpoint < 0) fprintf(stderr, "; last checkpoint: none\n");
        else fprintf(stderr, "; last checkpoint: step %ld\n", checkpoint);
        if (out.end == TRAIN_MOVED) {
            which = move.target; /* a planned move, not a restart */
            continue;
        }
        bool restart = out.end == TRAIN_DEVICE_LOST || out.end == TRAIN_KILLED ||
                       out.end == TRAIN_HUNG;
        if (!restart) {
            if (out.end == TRAIN_FAILED)
                fprintf(stderr, "porta train: not restarted: the script failed on its own "
                                "(not a lost device, a killed process or a hang)\n");
            return final_status(&out);
        }
        if (restarts == o.max_restarts) {
            fprintf(stderr, "porta train: giving up: %d restart%s allowed (--max-restarts), "
                            "all used\n", o.max_restarts, o.max_restarts == 1 ? "" : "s");
            return final_status(&out);
        }
        const char *why = "";
        if (out.end == TRAIN_KILLED && ranks > 1) {
            ranks--; /* a rank died: go on without it, the checkpoint reshards */
            why = "one rank fewer, ";
        } else {
            failed[which] = true;
            which = (which + 1) % device_count;
        }
        restarts++;
        fprintf(stderr, "porta train: restart %d of %d: %son %s, from ", restarts,
                o.max_restarts, why, devices[which].label);
        if (checkpoint < 0) fprintf(stderr, "the start (no checkpoint yet)\n");
        else fprintf(stderr, "the checkpoint of step %ld\n", checkpoint);
    }
}
