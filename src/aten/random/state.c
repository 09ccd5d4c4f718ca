/* Per-device Philox generator state: (seed, offset), behind one lock. */
#include <pthread.h>

#include "aten/random/state.h"
#include "core/status.h"
#include "runtime/tensor.h"

/* torch.cuda's default seed, so an unseeded porta device starts where an
 * unseeded GPU does. */
#define DEFAULT_SEED UINT64_C(67280421310721)
#define MAX_DEVICES 64

typedef struct generator {
    bool seeded; /* false: still at DEFAULT_SEED, offset 0 */
    uint64_t seed, offset;
} generator;

static generator generators[MAX_DEVICES];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static porta_status *check_index(int device) {
    if (device < 0 || device >= porta_device_count() || device >= MAX_DEVICES)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "generator: porta:%d does not exist (%d porta device(s))", device,
                           porta_device_count());
    return NULL;
}

/* The generator of a valid index, initialized on first use; lock held. */
static generator *locked_generator(int device) {
    generator *g = &generators[device];
    if (!g->seeded) *g = (generator){true, DEFAULT_SEED, 0};
    return g;
}

porta_status *porta_manual_seed(int device, uint64_t seed) {
    return porta_generator_set_state(device, seed, 0);
}

porta_status *porta_generator_get_state(int device, uint64_t *seed, uint64_t *offset) {
    PORTA_TRY(check_index(device));
    if (!seed || !offset)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "generator: seed or offset is NULL");
    pthread_mutex_lock(&lock);
    generator *g = locked_generator(device);
    *seed = g->seed;
    *offset = g->offset;
    pthread_mutex_unlock(&lock);
    return NULL;
}

porta_status *porta_generator_set_state(int device, uint64_t seed, uint64_t offset) {
    PORTA_TRY(check_index(device));
    pthread_mutex_lock(&lock);
    generators[device] = (generator){true, seed, offset};
    pthread_mutex_unlock(&lock);
    return NULL;
}

porta_status *aten_generator_next(porta_device *device, uint64_t count, uint64_t *seed,
                                  uint64_t *offset) {
    porta_device_info info;
    PORTA_TRY(porta_device_info_get(device, &info));
    PORTA_TRY(check_index(info.index));
    pthread_mutex_lock(&lock);
    generator *g = locked_generator(info.index);
    *seed = g->seed;
    *offset = g->offset;
    g->offset += (count + 3) / 4 * 4;
    pthread_mutex_unlock(&lock);
    return NULL;
}

porta_status *aten_random_fill(porta_tensor *dst, bool normal, double a, double b) {
    uint64_t seed, offset;
    PORTA_TRY(aten_generator_next(dst->buffer->device, (uint64_t)porta_tensor_numel(dst), &seed,
                                  &offset));
    return normal ? porta_random_normal(dst, seed, offset, a, b)
                  : porta_random_uniform(dst, seed, offset, a, b);
}
