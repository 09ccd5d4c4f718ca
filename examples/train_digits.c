/*
 * train_digits.c - trains a small MLP on the UCI handwritten digits with
 * libporta's public API, and doubles as an end-to-end smoke test.
 *
 *   python scripts/export_digits.py digits.csv
 *   train_digits digits.csv
 *
 * Model: 64 -> 128 (ReLU) -> 10, softmax cross-entropy, minibatch SGD with
 * momentum. Every piece of math (forward, loss, hand-written backward and
 * the parameter update) runs as porta ops on porta:0; the host only parses
 * the CSV, shuffles indices and prints.
 *
 * Exits nonzero when a porta call fails, when the final test accuracy is
 * below 90%, or when tensors are still allocated at the end.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <porta.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Configuration                                                        */
/* ------------------------------------------------------------------ */

enum { D_IN = 64, D_HIDDEN = 128, N_CLASSES = 10 };
enum { EPOCHS = 20, BATCH = 64 };
static const double LEARNING_RATE = 0.05;
static const double MOMENTUM = 0.9;
static const double TEST_FRACTION = 0.2;
static const double MIN_TEST_ACCURACY = 0.90;
static const uint64_t SEED = 1234;

/* ------------------------------------------------------------------ */
/* Status checking: any failure is fatal for a demo                     */
/* ------------------------------------------------------------------ */

static void check(porta_status *status, const char *call, const char *file, int line) {
    if (!status) return;
    fprintf(stderr, "%s:%d: %s failed: %s: %s\n", file, line, call,
            porta_code_name(porta_status_code(status)), porta_status_message(status));
    porta_status_free(status);
    exit(EXIT_FAILURE);
}
#define CHECK(call) check((call), #call, __FILE__, __LINE__)

/* Releases *t and clears it, so an out= slot can be reused as "allocate". */
static void release(porta_tensor **t) {
    porta_tensor_release(*t);
    *t = NULL;
}

/* 0-dim float32 tensor: broadcasts against anything and, being zero-dim,
 * never widens the other operand's dtype (PyTorch's promotion rules). */
static porta_tensor *scalar(porta_device *dev, float value) {
    porta_tensor *t = NULL;
    CHECK(porta_tensor_from_host(dev, PORTA_F32, 0, NULL, &value, &t));
    return t;
}

/* Host allocations fail only when the machine is out of memory. */
static void *checked(void *p) {
    if (!p) {
        fprintf(stderr, "out of host memory\n");
        exit(EXIT_FAILURE);
    }
    return p;
}

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* ------------------------------------------------------------------ */
/* Host side: CSV parsing and seeded shuffles                           */
/* ------------------------------------------------------------------ */

typedef struct {
    uint8_t *pixels; /* (N, 64), values 0..16 */
    int64_t *labels; /* (N,), values 0..9 */
    int n;
} HostData;

/* Each line: 64 pixel values then the label, comma separated. */
static HostData load_csv(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(EXIT_FAILURE);
    }
    HostData d = {0};
    int capacity = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '\n') continue;
        if (d.n == capacity) {
            capacity = capacity ? 2 * capacity : 1024;
            d.pixels = checked(realloc(d.pixels, (size_t)capacity * D_IN));
            d.labels = checked(realloc(d.labels, (size_t)capacity * sizeof *d.labels));
        }
        char *p = line;
        for (int j = 0; j <= D_IN; j++) {
            char *end;
            long v = strtol(p, &end, 10);
            bool is_label = j == D_IN;
            /* pixels end at a comma, the label at the end of the line */
            bool well_ended = is_label ? (*end == '\n' || *end == '\r' || *end == '\0')
                                       : *end == ',';
            if (end == p || !well_ended || v < 0 || v > (is_label ? N_CLASSES - 1 : 16)) {
                fprintf(stderr, "%s:%d: expected 64 pixels in 0..16 and a label in 0..9\n", path,
                        d.n + 1);
                exit(EXIT_FAILURE);
            }
            if (is_label) d.labels[d.n] = v;
            else d.pixels[(size_t)d.n * D_IN + (size_t)j] = (uint8_t)v;
            p = end + 1;
        }
        d.n++;
    }
    fclose(f);
    if (d.n < 10) {
        fprintf(stderr, "%s: only %d examples\n", path, d.n);
        exit(EXIT_FAILURE);
    }
    return d;
}

/* splitmix64: a tiny, well-mixed generator, enough for shuffling. */
static uint64_t next_random(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Fisher-Yates over 0..n-1. */
static void shuffled_indices(int64_t *idx, int n, uint64_t *rng) {
    for (int i = 0; i < n; i++) idx[i] = i;
    for (int i = n - 1; i > 0; i--) {
        int j = (int)(next_random(rng) % (uint64_t)(i + 1));
        int64_t t = idx[i];
        idx[i] = idx[j];
        idx[j] = t;
    }
}

/* ------------------------------------------------------------------ */
/* Device side: dataset splits                                          */
/* ------------------------------------------------------------------ */

typedef struct {
    porta_tensor *x; /* (N, 64) float32 in [0, 1] */
    porta_tensor *y; /* (N,) int64 */
    int64_t n;
} Split;

/* Uploads the data once, then carves train and test out of one seeded
 * permutation with index_select, so the split is the same on every run. */
static void make_splits(porta_device *dev, const HostData *d, Split *train, Split *test) {
    int64_t *perm = checked(malloc((size_t)d->n * sizeof *perm));
    uint64_t rng = SEED;
    shuffled_indices(perm, d->n, &rng);

    porta_tensor *pixels = NULL, *labels = NULL, *order = NULL, *x = NULL;
    CHECK(porta_tensor_from_host(dev, PORTA_U8, 2, (int64_t[]){d->n, D_IN}, d->pixels, &pixels));
    CHECK(porta_tensor_from_host(dev, PORTA_I64, 1, (int64_t[]){d->n}, d->labels, &labels));
    CHECK(porta_tensor_from_host(dev, PORTA_I64, 1, (int64_t[]){d->n}, perm, &order));
    free(perm);

    /* uint8 / float32 0-dim -> float32, pixels 0..16 -> [0, 1] (N, 64) */
    porta_tensor *sixteen = scalar(dev, 16.0f);
    CHECK(porta_binary(PORTA_DIV, pixels, sixteen, &x));

    int64_t n_test = (int64_t)(d->n * TEST_FRACTION);
    test->n = n_test;
    train->n = d->n - n_test;
    Split *parts[2] = {train, test};
    int64_t bounds[3] = {0, train->n, d->n};
    for (int i = 0; i < 2; i++) {
        porta_tensor *rows = NULL; /* view: (n_part,) of the permutation */
        CHECK(porta_slice(order, 0, bounds[i], bounds[i + 1], 1, &rows));
        parts[i]->x = NULL;
        parts[i]->y = NULL;
        CHECK(porta_index_select(x, 0, rows, &parts[i]->x));
        CHECK(porta_index_select(labels, 0, rows, &parts[i]->y));
        porta_tensor_release(rows);
    }
    porta_tensor_release(sixteen);
    porta_tensor_release(x);
    porta_tensor_release(order);
    porta_tensor_release(labels);
    porta_tensor_release(pixels);
}

/* ------------------------------------------------------------------ */
/* Model                                                                */
/* ------------------------------------------------------------------ */

enum { W1, B1, W2, B2, N_PARAMS };
static const struct {
    int rank;
    int64_t sizes[2];
} PARAM_SHAPES[N_PARAMS] = {
    [W1] = {2, {D_IN, D_HIDDEN}},      /* (64, 128), used as x @ w1 */
    [B1] = {1, {D_HIDDEN}},            /* (128,) */
    [W2] = {2, {D_HIDDEN, N_CLASSES}}, /* (128, 10) */
    [B2] = {1, {N_CLASSES}},           /* (10,) */
};

typedef struct {
    porta_tensor *t[N_PARAMS];
} Params;

typedef struct {
    Params params, grads, velocity;
    porta_tensor *zero;      /* 0-dim 0: ReLU's other operand */
    porta_tensor *momentum;  /* 0-dim */
    porta_tensor *neg_lr;    /* 0-dim -learning rate */
    porta_tensor *inv_batch; /* 0-dim 1/B, filled per batch */
    porta_tensor *classes;   /* (10,) int64 0..9, for one-hot labels */
} Model;

static void params_alloc(porta_device *dev, Params *p) {
    for (int i = 0; i < N_PARAMS; i++) {
        p->t[i] = NULL;
        CHECK(porta_tensor_empty(dev, PORTA_F32, PARAM_SHAPES[i].rank, PARAM_SHAPES[i].sizes,
                                 &p->t[i]));
    }
}

static void params_release(Params *p) {
    for (int i = 0; i < N_PARAMS; i++) release(&p->t[i]);
}

static void model_init(porta_device *dev, Model *m) {
    params_alloc(dev, &m->params);
    params_alloc(dev, &m->grads);
    params_alloc(dev, &m->velocity);
    /* Kaiming: std sqrt(2 / fan_in) keeps the ReLU layer's activations at a
     * steady scale; the output layer feeds softmax, not a ReLU, so it takes
     * gain 1. Philox streams are indexed by element, so w2 starts its
     * offset past w1's elements to draw fresh numbers from the same seed. */
    CHECK(porta_random_normal(m->params.t[W1], SEED, 0, 0.0, sqrt(2.0 / D_IN)));
    CHECK(porta_random_normal(m->params.t[W2], SEED, D_IN * D_HIDDEN, 0.0, sqrt(1.0 / D_HIDDEN)));
    CHECK(porta_fill(m->params.t[B1], 0.0));
    CHECK(porta_fill(m->params.t[B2], 0.0));
    for (int i = 0; i < N_PARAMS; i++) CHECK(porta_fill(m->velocity.t[i], 0.0));

    m->zero = scalar(dev, 0.0f);
    m->momentum = scalar(dev, (float)MOMENTUM);
    m->neg_lr = scalar(dev, (float)-LEARNING_RATE);
    m->inv_batch = NULL;
    CHECK(porta_tensor_empty(dev, PORTA_F32, 0, NULL, &m->inv_batch));
    int64_t classes[N_CLASSES];
    for (int i = 0; i < N_CLASSES; i++) classes[i] = i;
    m->classes = NULL;
    CHECK(porta_tensor_from_host(dev, PORTA_I64, 1, (int64_t[]){N_CLASSES}, classes, &m->classes));
}

static void model_release(Model *m) {
    params_release(&m->params);
    params_release(&m->grads);
    params_release(&m->velocity);
    release(&m->zero);
    release(&m->momentum);
    release(&m->neg_lr);
    release(&m->inv_batch);
    release(&m->classes);
}

/* What forward keeps for backward; all (B, ...) for a batch of B. */
typedef struct {
    porta_tensor *h;    /* (B, 128) relu(x @ w1 + b1) */
    porta_tensor *logp; /* (B, 10) log_softmax(h @ w2 + b2) */
} Activations;

static void activations_release(Activations *a) {
    release(&a->h);
    release(&a->logp);
}

/* ------------------------------------------------------------------ */
/* Forward, loss, backward, update                                      */
/* ------------------------------------------------------------------ */

/* x (B, 64) -> acts. Intermediates are updated in place (out = an input)
 * rather than allocated per op. */
static void forward(const Model *m, const porta_tensor *x, Activations *acts) {
    porta_tensor *const *p = m->params.t;
    porta_tensor *h = NULL, *z = NULL;
    CHECK(porta_matmul(x, p[W1], &h));                  /* (B, 128) */
    CHECK(porta_binary(PORTA_ADD, h, p[B1], &h));       /* + (128,) broadcast */
    CHECK(porta_binary(PORTA_MAXIMUM, h, m->zero, &h)); /* relu */
    CHECK(porta_matmul(h, p[W2], &z));                  /* (B, 10) logits */
    CHECK(porta_binary(PORTA_ADD, z, p[B2], &z));       /* + (10,) */

    /* log_softmax(z) = (z - max) - log(sum(exp(z - max))); subtracting the
     * row max keeps exp from overflowing. */
    int classes_axis = 1;
    porta_tensor *row = NULL, *e = NULL;
    CHECK(porta_reduce(PORTA_REDUCE_MAX, z, &classes_axis, 1, true, &row)); /* (B, 1) */
    CHECK(porta_binary(PORTA_SUB, z, row, &z));
    CHECK(porta_unary(PORTA_EXP, z, &e));                                   /* (B, 10) */
    CHECK(porta_reduce(PORTA_REDUCE_SUM, e, &classes_axis, 1, true, &row)); /* (B, 1) */
    CHECK(porta_unary(PORTA_LOG, row, &row));
    CHECK(porta_binary(PORTA_SUB, z, row, &z));
    porta_tensor_release(e);
    porta_tensor_release(row);

    acts->h = h;
    acts->logp = z;
}

/* onehot (B, 10) float32 from labels y (B,): y[:, None] == classes. */
static porta_tensor *one_hot(const Model *m, const porta_tensor *y) {
    porta_tensor *col = NULL, *eq = NULL, *onehot = NULL;
    int64_t b = porta_tensor_sizes(y)[0];
    CHECK(porta_reshape(y, 2, (int64_t[]){b, 1}, &col)); /* (B, 1) view */
    CHECK(porta_binary(PORTA_EQ, col, m->classes, &eq));  /* (B, 10) bool */
    CHECK(porta_cast(eq, PORTA_F32, &onehot));
    porta_tensor_release(eq);
    porta_tensor_release(col);
    return onehot;
}

/* loss_sum (0-dim) -= sum(onehot * logp): cross-entropy is -log p[label],
 * summed so batches of different sizes add up to the epoch total. */
static void accumulate_loss(const porta_tensor *logp, const porta_tensor *onehot,
                            porta_tensor *loss_sum) {
    porta_tensor *picked = NULL, *total = NULL;
    CHECK(porta_binary(PORTA_MUL, onehot, logp, &picked)); /* (B, 10) */
    CHECK(porta_reduce(PORTA_REDUCE_SUM, picked, NULL, 0, false, &total));
    CHECK(porta_binary(PORTA_SUB, loss_sum, total, &loss_sum));
    porta_tensor_release(total);
    porta_tensor_release(picked);
}

/* correct (0-dim int64) += number of rows whose argmax equals the label. */
static void accumulate_correct(const porta_tensor *logp, const porta_tensor *y,
                               porta_tensor *correct) {
    int classes_axis = 1;
    porta_tensor *pred = NULL, *hit = NULL, *hits = NULL;
    CHECK(porta_reduce(PORTA_REDUCE_ARGMAX, logp, &classes_axis, 1, false, &pred)); /* (B,) */
    CHECK(porta_binary(PORTA_EQ, pred, y, &hit));                                   /* bool */
    CHECK(porta_reduce(PORTA_REDUCE_SUM, hit, NULL, 0, false, &hits));              /* int64 */
    CHECK(porta_binary(PORTA_ADD, correct, hits, &correct));
    porta_tensor_release(hits);
    porta_tensor_release(hit);
    porta_tensor_release(pred);
}

/* Gradients of the mean cross-entropy into m->grads (written with out=).
 * The inputs x (B, 64) and labels enter as onehot (B, 10). */
static void backward(Model *m, const porta_tensor *x, const porta_tensor *onehot,
                     const Activations *acts) {
    porta_tensor **g = m->grads.t;
    const int swap[2] = {1, 0};
    const int batch_axis = 0;

    /* dlogits = (softmax - onehot) / B  (B, 10) */
    porta_tensor *dz = NULL;
    CHECK(porta_unary(PORTA_EXP, acts->logp, &dz));
    CHECK(porta_binary(PORTA_SUB, dz, onehot, &dz));
    CHECK(porta_binary(PORTA_MUL, dz, m->inv_batch, &dz));

    /* dw2 = h^T @ dlogits (128, 10); db2 = sum over the batch (10,) */
    porta_tensor *h_t = NULL;
    CHECK(porta_permute(acts->h, swap, &h_t)); /* (128, B) view */
    CHECK(porta_matmul(h_t, dz, &g[W2]));
    CHECK(porta_reduce(PORTA_REDUCE_SUM, dz, &batch_axis, 1, false, &g[B2]));

    /* dh = dlogits @ w2^T (B, 128), zeroed where the ReLU was inactive */
    porta_tensor *w2_t = NULL, *dh = NULL, *active = NULL;
    CHECK(porta_permute(m->params.t[W2], swap, &w2_t)); /* (10, 128) view */
    CHECK(porta_matmul(dz, w2_t, &dh));
    CHECK(porta_binary(PORTA_GT, acts->h, m->zero, &active)); /* (B, 128) bool */
    CHECK(porta_ternary(PORTA_WHERE, active, dh, m->zero, &dh));

    /* dw1 = x^T @ dh (64, 128); db1 = sum over the batch (128,) */
    porta_tensor *x_t = NULL;
    CHECK(porta_permute(x, swap, &x_t)); /* (64, B) view */
    CHECK(porta_matmul(x_t, dh, &g[W1]));
    CHECK(porta_reduce(PORTA_REDUCE_SUM, dh, &batch_axis, 1, false, &g[B1]));

    porta_tensor_release(x_t);
    porta_tensor_release(active);
    porta_tensor_release(dh);
    porta_tensor_release(w2_t);
    porta_tensor_release(h_t);
    porta_tensor_release(dz);
}

/* SGD with momentum, in place: v = momentum * v + g; p = p - lr * v. */
static void update(Model *m) {
    for (int i = 0; i < N_PARAMS; i++) {
        porta_tensor **v = &m->velocity.t[i], **p = &m->params.t[i];
        CHECK(porta_ternary(PORTA_FMA, *v, m->momentum, m->grads.t[i], v));
        CHECK(porta_ternary(PORTA_FMA, *v, m->neg_lr, *p, p));
    }
}

/* ------------------------------------------------------------------ */
/* Training and evaluation                                              */
/* ------------------------------------------------------------------ */

typedef struct {
    double loss, accuracy;
} EpochStats;

/* One pass over the training split in a fresh seeded order. Loss and
 * accuracy accumulate on the device while the weights move, and are read
 * back once at the end. */
static EpochStats train_epoch(porta_device *dev, Model *m, const Split *train, uint64_t *rng) {
    int64_t *perm = checked(malloc((size_t)train->n * sizeof *perm));
    shuffled_indices(perm, (int)train->n, rng);
    porta_tensor *order = NULL, *loss_sum = NULL, *correct = NULL;
    CHECK(porta_tensor_from_host(dev, PORTA_I64, 1, (int64_t[]){train->n}, perm, &order));
    free(perm);
    CHECK(porta_tensor_empty(dev, PORTA_F32, 0, NULL, &loss_sum));
    CHECK(porta_tensor_empty(dev, PORTA_I64, 0, NULL, &correct));
    CHECK(porta_fill(loss_sum, 0.0));
    CHECK(porta_fill(correct, 0.0));

    for (int64_t start = 0; start < train->n; start += BATCH) {
        int64_t stop = start + BATCH < train->n ? start + BATCH : train->n;
        /* The last batch is short; the gradient is a mean over its size. */
        CHECK(porta_fill(m->inv_batch, 1.0 / (double)(stop - start)));

        porta_tensor *rows = NULL, *x = NULL, *y = NULL;
        CHECK(porta_slice(order, 0, start, stop, 1, &rows)); /* (B,) view */
        CHECK(porta_index_select(train->x, 0, rows, &x));    /* (B, 64) */
        CHECK(porta_index_select(train->y, 0, rows, &y));    /* (B,) */
        porta_tensor *onehot = one_hot(m, y);                /* (B, 10) */

        Activations acts;
        forward(m, x, &acts);
        accumulate_loss(acts.logp, onehot, loss_sum);
        accumulate_correct(acts.logp, y, correct);
        backward(m, x, onehot, &acts);
        update(m);

        activations_release(&acts);
        porta_tensor_release(onehot);
        porta_tensor_release(y);
        porta_tensor_release(x);
        porta_tensor_release(rows);
    }

    float loss;
    int64_t hits;
    CHECK(porta_tensor_to_host(loss_sum, &loss, sizeof loss));
    CHECK(porta_tensor_to_host(correct, &hits, sizeof hits));
    porta_tensor_release(correct);
    porta_tensor_release(loss_sum);
    porta_tensor_release(order);
    return (EpochStats){loss / (double)train->n, (double)hits / (double)train->n};
}

/* Accuracy on a whole split in one batch. */
static double evaluate(porta_device *dev, const Model *m, const Split *split) {
    porta_tensor *correct = NULL;
    CHECK(porta_tensor_empty(dev, PORTA_I64, 0, NULL, &correct));
    CHECK(porta_fill(correct, 0.0));
    Activations acts;
    forward(m, split->x, &acts);
    accumulate_correct(acts.logp, split->y, correct);
    int64_t hits;
    CHECK(porta_tensor_to_host(correct, &hits, sizeof hits));
    activations_release(&acts);
    porta_tensor_release(correct);
    return (double)hits / (double)split->n;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIGITS.csv  (make it with scripts/export_digits.py)\n",
                argv[0]);
        return EXIT_FAILURE;
    }
    porta_device *dev;
    porta_device_info info;
    CHECK(porta_device_get(0, &dev));
    CHECK(porta_device_info_get(dev, &info));
    printf("porta %s on porta:%d (%s, %s, %d threads)\n", porta_version_string(), info.index,
           info.backend, info.name, info.compute_units);

    HostData data = load_csv(argv[1]);
    Split train, test;
    make_splits(dev, &data, &train, &test);
    free(data.pixels);
    free(data.labels);
    printf("digits: %" PRId64 " train, %" PRId64 " test; MLP %d-%d-%d, batch %d, SGD lr %.2f "
           "momentum %.1f\n",
           train.n, test.n, D_IN, D_HIDDEN, N_CLASSES, BATCH, LEARNING_RATE, MOMENTUM);

    Model model;
    model_init(dev, &model);

    uint64_t rng = SEED + 1; /* batch order; the split was drawn from SEED */
    double t0 = now_ms();
    double test_acc = 0.0;
    for (int epoch = 1; epoch <= EPOCHS; epoch++) {
        double start = now_ms(); /* times training and the test pass */
        EpochStats s = train_epoch(dev, &model, &train, &rng);
        test_acc = evaluate(dev, &model, &test);
        printf("epoch %2d | train loss %.4f | train acc %6.2f%% | test acc %6.2f%% | %6.1f ms\n",
               epoch, s.loss, 100.0 * s.accuracy, 100.0 * test_acc, now_ms() - start);
    }
    double total_ms = now_ms() - t0;

    model_release(&model);
    release(&train.x);
    release(&train.y);
    release(&test.x);
    release(&test.y);

    uint64_t leaked = porta_memory_allocated();
    printf("final test accuracy %.2f%% in %.0f ms; peak device memory %.1f KiB, held at exit "
           "%" PRIu64 " bytes\n",
           100.0 * test_acc, total_ms, (double)porta_memory_peak() / 1024.0, leaked);
    if (leaked != 0) {
        fprintf(stderr, "FAIL: %" PRIu64 " bytes still allocated\n", leaked);
        return EXIT_FAILURE;
    }
    if (test_acc < MIN_TEST_ACCURACY) {
        fprintf(stderr, "FAIL: test accuracy below %.0f%%\n", 100.0 * MIN_TEST_ACCURACY);
        return EXIT_FAILURE;
    }
    return EXIT_SUCCESS;
}
