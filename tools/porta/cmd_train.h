/* porta train: the supervisor that keeps a training script running
 * (docs/train.md). cmd_train.c parses the options and decides (restart,
 * which device, how many ranks); cmd_train_devices.c turns --devices into
 * the child's PORTA_VISIBLE_DEVICES values; cmd_train_child.c starts one
 * attempt and watches it until it ends, hangs or is stopped. */
#ifndef PORTA_TOOL_CMD_TRAIN_H
#define PORTA_TOOL_CMD_TRAIN_H

#include <stdbool.h>

#include "cli.h"

/* The exit status with which the script's in-process agent reports a lost
 * device (torch_porta/_train_agent.py: EX_TEMPFAIL, "try again"). */
#define TRAIN_DEVICE_LOST_EXIT 75

/* One device a run may go to. */
typedef struct train_device {
    char visible[64]; /* the child's PORTA_VISIBLE_DEVICES: its "porta" is this device */
    char label[160];  /* "porta:1 (opencl: pthread-...)" for the log */
    int index;        /* porta:N here */
} train_device;

/* The --devices list in the order runs take them. Returns 0, or prints the
 * error and returns 2. */
int train_devices(const char *spec, train_device *devices, int *count);

/* --move-when cheaper, asked at a checkpoint of a run on devices[current]:
 * the entry of the list to move to (its cost per million samples of the
 * standard workload, by the stored measurements and the price file at
 * $PORTA_PRICES, is under 90% of the current device's; devices a run
 * failed on are not candidates), or -1 to stay. checkpoint < 0: before the
 * first run, only logs the figures (measuring what is missing).
 * Logs its figures either way. */
int train_cheaper_device(const train_device *devices, int count, int current, long checkpoint,
                         const bool *failed);

typedef struct train_attempt {
    char *const *command;    /* the script's command line, NULL-terminated */
    int ranks;               /* 0: one process; else mpirun -np ranks */
    const train_device *device;
    const char *checkpoint_dir, *progress_path;
    int checkpoint_every;    /* steps; 0: by time */
    double checkpoint_seconds;
    double hang_seconds;     /* no step for this long: hung */
    bool keep_faults;        /* pass PORTA_FAULTS on (a fault belongs to one device) */
    /* Asked at each new checkpoint; true stops the attempt there (TRAIN_MOVED).
     * NULL: never. */
    bool (*at_checkpoint)(void *context, long checkpoint);
    void *context;
} train_attempt;

typedef enum train_end {
    TRAIN_DONE,        /* exit status 0 */
    TRAIN_DEVICE_LOST, /* the agent's exit status */
    TRAIN_KILLED,      /* a signal ended the process (or, under mpirun, a rank) */
    TRAIN_HUNG,        /* no step for hang_seconds: killed by the supervisor */
    TRAIN_FAILED,      /* another exit status: the script's own error */
    TRAIN_STOPPED,     /* the supervisor was interrupted (SIGINT, SIGTERM) */
    TRAIN_MOVED,       /* stopped after a checkpoint to continue elsewhere */
} train_end;

typedef struct train_outcome {
    train_end end;
    int status;         /* exit status, or signal number for TRAIN_KILLED */
    long step;          /* the last step reported, -1 if none */
    long checkpoint;    /* the step of the last checkpoint reported, -1 if none */
    double seconds;     /* how long the attempt ran */
} train_outcome;

/* Runs one attempt to its end. Returns 0, or prints why it could not be
 * started and returns 1. */
int train_run_attempt(const train_attempt *attempt, train_outcome *outcome);

/* The last step and checkpoint step a progress file records (-1 if none). */
void train_read_progress(const char *path, long *step, long *checkpoint);

/* `porta train [options] -- command...` (main.c's table). */
int porta_cmd_train(int argc, char **argv);

#endif
