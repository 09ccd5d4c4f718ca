/* porta: the command-line tool. Each command is a row in the table below
 * with its own help text; later commands (run, bench, inspect) join it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "cmd_train.h"
#include "porta.h"

int porta_cmd_compare(int argc, char **argv); /* cmd_compare.c */

typedef struct command {
    const char *name;
    const char *summary;
    const char *usage;
    int (*run)(int argc, char **argv);
} command;

static const char *capability_names(uint32_t caps, char *buf, size_t cap) {
    static const struct { uint32_t bit; const char *name; } names[] = {
        {PORTA_CAP_F64, "f64"},      {PORTA_CAP_F16, "f16"},       {PORTA_CAP_BF16, "bf16"},
        {PORTA_CAP_AVX2, "avx2"},    {PORTA_CAP_AVX512, "avx512"},
        {PORTA_CAP_HOST_MEMORY, "host-memory"},
    };
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof names / sizeof names[0] && used < cap; i++)
        if (caps & names[i].bit)
            used += (size_t)snprintf(buf + used, cap - used, "%s%s", used ? "," : "", names[i].name);
    return buf;
}

static int cmd_devices(int argc, char **argv) {
    if (argc > 1) {
        fprintf(stderr, "porta devices: unexpected argument '%s' (try 'porta devices --help')\n",
                argv[1]);
        return 2;
    }
    int count = porta_device_count();
    printf("%-8s %-8s %-8s %-10s %-28s %s\n", "device", "backend", "threads", "memory",
           "capabilities", "name");
    for (int i = 0; i < count; i++) {
        porta_device *device;
        porta_device_info info;
        porta_status *status = porta_device_get(i, &device);
        if (!status) status = porta_device_info_get(device, &info);
        if (status) {
            fprintf(stderr, "porta devices: %s\n", porta_status_message(status));
            porta_status_free(status);
            return 1;
        }
        char id[16], memory[32], caps[128];
        snprintf(id, sizeof id, "porta:%d", info.index);
        if (info.memory_bytes) /* 0: the device does not say (XLA's CPU plugin) */
            snprintf(memory, sizeof memory, "%.1f GiB", (double)info.memory_bytes / (1u << 30));
        else
            snprintf(memory, sizeof memory, "-");
        printf("%-8s %-8s %-8d %-10s %-28s %s\n", id, info.backend, info.compute_units, memory,
               capability_names(info.capabilities, caps, sizeof caps), info.name);
    }
    const char *backend, *why;
    for (int i = 0; porta_backend_unavailable_get(i, &backend, &why); i++)
        printf("%s: unavailable (%s)\n", backend, why);
    return 0;
}

static const command commands[] = {
    {"devices", "list every device Porta can run on",
     "usage: porta devices\n\n"
     "Prints one line per device: its index (porta:N), backend, threads or\n"
     "compute units, memory, capabilities and name; then each backend that\n"
     "is unavailable here (and each PJRT plugin that cannot be used), and\n"
     "why. PORTA_VISIBLE_DEVICES picks and orders the devices (indices of\n"
     "this list, or backend names: \"opencl,cpu\", \"pjrt\").\n",
     cmd_devices},
    {"run", "run a model (.porta or .pt2) on tensors from a safetensors file",
     "usage: porta run MODEL --input IN.safetensors --output OUT.safetensors [--device D]\n"
     "                 [--max-seconds S]\n\n"
     "Loads MODEL (a .porta file written by torch_porta.export, or a .pt2 archive\n"
     "of torch.export.save), runs it once on device D (porta:N as 'porta devices'\n"
     "lists them, or a backend name such as cpu or opencl; default porta:0) and\n"
     "writes its outputs to OUT, each under the output's name in the graph\n"
     "(by position, \"0\", \"1\", ..., when the model returns a value twice).\n"
     "Each model input is the tensor of IN named as the input ('porta inspect\n"
     "MODEL' lists the names), else the tensor named by its position (\"0\",\n"
     "\"1\", ...); a model of one input also takes a file of one tensor.\n"
     "OUT is replaced once complete; a symbolic link there is followed, and a\n"
     "directory, FIFO or device there is refused. --max-seconds S stops a run\n"
     "still going after S seconds (checked between the model's nodes; each\n"
     "node's work is then waited for before the next).\n"
     "Exit status: 0 done, 1 the model or its inputs were refused or failed\n"
     "(or the run took longer than --max-seconds), 2 bad usage.\n",
     cmd_run},
    {"bench", "time a model on one or more devices",
     "usage: porta bench MODEL [--devices all|D,D...] [--iterations N] [--warmup N]\n"
     "                   [--input IN.safetensors] [--size SYMBOL=N] [--json FILE]\n\n"
     "Runs MODEL --warmup times (default 3; loads weights, builds kernels), then\n"
     "--iterations times (default 20) per device, and prints per device the\n"
     "latency p50 and p99, the mean, runs and samples (dim 0 of the first input)\n"
     "per second and the peak memory the runs added. Inputs come from IN (as\n"
     "for 'porta run') or are random, symbolic dims taking --size SYMBOL=N\n"
     "(N >= 1, SYMBOL one of the model's symbolic dims; default 1). --json FILE\n"
     "also writes the numbers as JSON (replaced as 'porta run' replaces OUT).\n",
     cmd_bench},
    {"inspect", "show the tensors and graph of a .porta, .pt2 or .safetensors file",
     "usage: porta inspect FILE [--size SYMBOL=N]\n\n"
     "Lists the tensors of FILE (name, dtype, shape) and their total; for a model\n"
     "also its format version, inputs (symbolic dims by name), outputs, weight\n"
     "and parameter counts, how many nodes call each op, and an estimate of one\n"
     "run's cost worked out from the graph without running it: FLOPs (a\n"
     "multiply-add counts 2) and peak memory (weights, inputs and the results\n"
     "alive at once). Symbolic dims take --size SYMBOL=N, else their smallest\n"
     "size above 0; nodes of ops the estimate cannot size are named and left out\n"
     "(docs/porta-format.md describes the estimate).\n",
     cmd_inspect},
    {"serve", "serve models over HTTP: the Open Inference Protocol (KServe v2)",
     "usage: porta serve MODEL... [--device D] [--host 127.0.0.1] [--port 8000]\n"
     "                   [--max-batch N] [--batch-delay-ms T] [--threads N]\n"
     "                   [--max-queue N] [--max-body-mib N] [--max-header-kib N]\n"
     "                   [--max-connections N] [--idle-timeout-s S]\n"
     "                   [--request-timeout-s S]\n\n"
     "Loads each MODEL (.porta or .pt2) once on device D (as for 'porta run';\n"
     "default porta:0), named by its file name without the extension, and\n"
     "answers the Open Inference Protocol's REST endpoints: GET /v2/health/live,\n"
     "/v2/health/ready, /v2, /v2/models/NAME[/versions/1][/ready], POST\n"
     "/v2/models/NAME[/versions/1]/infer (JSON or binary tensor data), and\n"
     "GET /metrics (Prometheus text); a model exported by\n"
     "torch_porta.export_causal_lm also answers POST .../generate and\n"
     "/generate_stream (token generation; docs/serve.md). Requests for one model\n"
     "that queue while it runs, or arrive within --batch-delay-ms (default 0)\n"
     "of the first one waiting, are stacked along its batch dim (dim 0 of\n"
     "every input, one symbol; see docs/serve.md) up to --max-batch rows\n"
     "(default 8) and run once; at most --max-queue (default 256) wait, more\n"
     "get 503. --threads sets the CPU backend's compute threads. Limits: bodies\n"
     "of --max-body-mib (64; larger: 413), headers of --max-header-kib (16;\n"
     "larger: 431), --max-connections (256) at once, connections idle for\n"
     "--idle-timeout-s (30) are closed, a model run still going after\n"
     "--request-timeout-s (none) stops with 503. Binds --host 127.0.0.1 unless\n"
     "told otherwise; --port 0 takes a free port. Each request logs a\n"
     "key=value line on stderr. SIGTERM or SIGINT: stops accepting, finishes\n"
     "the requests in flight, exits 0.\n"
     "Exit status: 0 stopped by a signal, 1 a model or the listener failed,\n"
     "2 bad usage.\n",
     cmd_serve},
    {"generate", "generate tokens with a causal language model and its KV cache",
     "usage: porta generate MODEL --ids ID,... [--max-tokens N] [--temperature T]\n"
     "                      [--top-k K] [--top-p P] [--seed S] [--stop ID,...]\n"
     "                      [--device D]\n\n"
     "MODEL is a decode step with its KV cache as inputs and outputs, as\n"
     "torch_porta.export_causal_lm writes it (docs/serve.md, \"Generation\").\n"
     "Feeds the prompt --ids, then generates up to --max-tokens (default 16)\n"
     "tokens on device D (as for 'porta run'; default porta:0) and prints\n"
     "them comma-separated on one line. --temperature 0 (the default) is\n"
     "greedy; above 0 samples from the softmax of logits / T, cut to the\n"
     "--top-k most likely tokens (0: all) and to the fewest whose probability\n"
     "reaches --top-p (1: all), with Philox draws of --seed (default 0): a\n"
     "seed gives the same tokens on every device. Generation ends after a\n"
     "--stop id (printed) or when the cache is full.\n"
     "Exit status: 0 done, 1 the model or the ids were refused or failed, 2 bad\n"
     "usage.\n",
     cmd_generate},
    {"compare", "compare a model's speed, memory, energy and cost across devices",
     "usage: porta compare MODEL [--devices all|D,D...] [--iterations N] [--warmup N]\n"
     "                     [--input IN.safetensors] [--prices FILE] [--json FILE]\n"
     "                     [--html FILE]\n\n"
     "Runs MODEL --warmup times (default 3), then --iterations times (default 20)\n"
     "on each device (default all) and prints per device samples per second (dim 0\n"
     "of the first input), latency p50 and p99, peak memory, energy per run where\n"
     "the platform has a counter (RAPL through powercap for the processor, NVML\n"
     "for NVIDIA GPUs; otherwise 'not measurable' and why) and, with a price file,\n"
     "the cost per million samples. --devices takes porta:auto[:OBJECTIVE] too:\n"
     "the device chosen by measurement (throughput, latency, cost with\n"
     "$PORTA_PRICES, energy). --json writes the comparison as JSON and\n"
     "--html an offline HTML report with plots (docs/compare.md describes both and\n"
     "the price file; examples/prices.json is one).\n",
     porta_cmd_compare},
    {"train", "run a training script that survives lost devices, killed ranks and hangs",
     "usage: porta train [--devices LIST|auto[:OBJECTIVE]] [--checkpoint-every N |\n"
     "                   --checkpoint-seconds S] [--checkpoint-dir D] [--max-restarts K]\n"
     "                   [--ranks R] [--hang-seconds T] [--move-when cheaper]\n"
     "                   -- COMMAND...\n\n"
     "Runs COMMAND (an unchanged PyTorch script that imports torch_porta and draws its\n"
     "batches from a DataLoader) with an agent in it that writes a torch_porta.checkpoint\n"
     "to D (default porta-train.ckpt) every N optimizer steps or S seconds (default\n"
     "60 s) and, when D holds one, resumes from it: the loop continues from the next step\n"
     "with the batches it would have drawn. When the script loses its device (exit\n"
     "status 75 from the agent), is killed, or makes no step for T seconds (default 600),\n"
     "it is restarted from the last checkpoint on the next device of LIST (porta:N or\n"
     "backend names, as PORTA_VISIBLE_DEVICES makes the script's \"porta\" that device;\n"
     "after the last, the first again; default all), at most K times (default 3).\n"
     "auto[:OBJECTIVE] orders the devices by select_device's figures from stored\n"
     "measurements (throughput, latency, cost with $PORTA_PRICES, energy).\n"
     "--move-when cheaper: at each checkpoint, moves the run to a device of LIST\n"
     "whose cost by those measurements and $PORTA_PRICES is under 90% of the\n"
     "current one's (not counted as a restart). --ranks R runs\n"
     "mpirun -np R COMMAND; when a rank dies the job restarts with one rank fewer (the\n"
     "checkpoint reshards). PORTA_FAULTS reaches only the runs on the first device.\n"
     "Every decision is a stderr line starting 'porta train:' (docs/train.md).\n"
     "Exit status: the script's (0 done), 128+S after a signal S, 1 after a hang,\n"
     "2 bad usage.\n",
     porta_cmd_train},
};
#define COMMAND_COUNT (sizeof commands / sizeof commands[0])

static void print_help(FILE *out) {
    fprintf(out,
            "usage: porta [--version] [--help] COMMAND [ARGS]\n\n"
            "Porta runs tensor programs on any hardware.\n\ncommands:\n");
    for (size_t i = 0; i < COMMAND_COUNT; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'porta COMMAND --help' describes a command.\n");
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "porta: missing command (try 'porta --help')\n");
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        print_help(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("porta %s\n", porta_version_string());
        return 0;
    }
    for (size_t i = 0; i < COMMAND_COUNT; i++) {
        if (strcmp(argv[1], commands[i].name)) continue;
        /* After "--" the words are another program's (porta train). */
        for (int a = 2; a < argc && strcmp(argv[a], "--"); a++)
            if (!strcmp(argv[a], "--help") || !strcmp(argv[a], "-h")) {
                fputs(commands[i].usage, stdout);
                return 0;
            }
        int code = commands[i].run(argc - 1, argv + 1);
        /* What was printed reached stdout only if the flush succeeds (a
         * full disk reports itself here, not at printf). */
        if (fflush(stdout) != 0) {
            fprintf(stderr, "porta %s: cannot write the output: %s\n", argv[1], strerror(errno));
            return code ? code : 1;
        }
        return code;
    }
    fprintf(stderr, "porta: unknown command '%s' (try 'porta --help')\n", argv[1]);
    return 2;
}
