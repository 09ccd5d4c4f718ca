/* The per-device generator state behind the random aten ops. */
#include "aten/random/state.h"
#include "test.h"

TEST(test_aten_generator_seeds_and_reserves_whole_blocks) {
    uint64_t seed = 0, offset = 0, saved_seed = 0, saved_offset = 0;
    CHECK_OK(porta_generator_get_state(0, &saved_seed, &saved_offset));
    CHECK_OK(porta_manual_seed(0, 1234));
    CHECK_OK(aten_generator_next(test_cpu(), 5, &seed, &offset));
    CHECK(seed == 1234 && offset == 0);
    CHECK_OK(aten_generator_next(test_cpu(), 8, &seed, &offset));
    CHECK(seed == 1234 && offset == 8); /* 5 rounded up to a block of 4 */
    CHECK_OK(aten_generator_next(test_cpu(), 0, &seed, &offset));
    CHECK(offset == 16);
    CHECK_OK(porta_generator_get_state(0, &seed, &offset));
    CHECK(seed == 1234 && offset == 16);
    CHECK_OK(porta_generator_set_state(0, 7, 40));
    CHECK_OK(aten_generator_next(test_cpu(), 1, &seed, &offset));
    CHECK(seed == 7 && offset == 40);
    CHECK_OK(porta_generator_set_state(0, saved_seed, saved_offset));
}

TEST(test_aten_generator_rejects_missing_devices) {
    uint64_t offset;
    CHECK_ERR(porta_manual_seed(-1, 1), PORTA_ERR_OUT_OF_RANGE, "porta:-1");
    CHECK_ERR(porta_generator_set_state(porta_device_count(), 1, 0), PORTA_ERR_OUT_OF_RANGE,
              "does not exist");
    CHECK_ERR(porta_generator_get_state(0, NULL, &offset), PORTA_ERR_INVALID_ARGUMENT, "NULL");
}
