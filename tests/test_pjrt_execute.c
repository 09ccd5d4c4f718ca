/* Primitives on the first PJRT device (the XLA CPU plugin in CI) beyond
 * what the conformance suite compares: views of one buffer at other
 * offsets and fills of other values run the module compiled before (the
 * offset and the value travel at run time), supports() refuses what
 * has no StableHLO kernel so that placement runs it elsewhere, and pad,
 * gather, index_select and sort run there as their own modules, with the
 * CPU's error for an index out of range. Without a
 * PJRT plugin the tests say so on stderr; PORTA_REQUIRE_PJRT makes that a
 * failure. */
#include <stdlib.h>
#include <string.h>

#include "runtime/device.h"
#include "test.h"

static uint64_t compiled(void) {
    porta_compiler_stats stats;
    porta_compiler_stats_get(&stats);
    return stats.kernels_compiled;
}

TEST(test_pjrt_views_at_other_offsets_reuse_one_module) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    float host[16];
    for (int i = 0; i < 16; i++) host[i] = (float)i;
    const int64_t all[1] = {16}, eight[1] = {8}, unit[1] = {1};
    porta_tensor *x = NULL;
    CHECK_OK(porta_tensor_from_host(device, PORTA_F32, 1, all, host, &x));
    uint64_t after_first = 0;
    for (int64_t offset = 0; offset <= 4; offset++) {
        porta_tensor *view = NULL, *y = NULL;
        CHECK_OK(porta_tensor_view(porta_tensor_buffer(x), PORTA_F32, 1, eight, unit, offset,
                                   &view));
        CHECK_OK(porta_unary(PORTA_SQRT, view, &y));
        float got[8];
        CHECK_OK(porta_tensor_to_host(y, got, sizeof got));
        for (int i = 0; i < 8; i++)
            CHECK_MSG(fabsf(got[i] - sqrtf((float)(offset + i))) < 1e-6f,
                      "offset %lld element %d: %g", (long long)offset, i, got[i]);
        porta_tensor_release(view);
        porta_tensor_release(y);
        if (offset == 0) after_first = compiled();
    }
    CHECK_MSG(compiled() == after_first, "%llu modules compiled for new offsets",
              (unsigned long long)(compiled() - after_first));
    porta_tensor_release(x);
}

TEST(test_pjrt_fills_of_other_values_reuse_one_module) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    const int64_t sizes[2] = {3, 5};
    porta_tensor *x = NULL;
    CHECK_OK(porta_tensor_empty(device, PORTA_BF16, 2, sizes, &x));
    uint64_t after_first = 0;
    const double values[3] = {1.5, -2.25, 1e30};
    for (int v = 0; v < 3; v++) {
        CHECK_OK(porta_fill(x, values[v]));
        uint16_t got[15];
        CHECK_OK(porta_tensor_to_host(x, got, sizeof got));
        float first;
        uint32_t bits = (uint32_t)got[14] << 16;
        memcpy(&first, &bits, sizeof first);
        CHECK_MSG(fabsf(first - (float)values[v]) <= fabsf((float)values[v]) * 0.01f,
                  "fill %g gave %g", values[v], first);
        if (v == 0) after_first = compiled();
    }
    CHECK(compiled() == after_first);
    porta_tensor_release(x);
}

TEST(test_pjrt_supports_refuses_what_has_no_stablehlo_kernel) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    const int64_t sizes[1] = {4};
    porta_tensor *f = NULL, *i = NULL;
    CHECK_OK(porta_tensor_empty(device, PORTA_F32, 1, sizes, &f));
    CHECK_OK(porta_tensor_empty(device, PORTA_I32, 1, sizes, &i));
    const porta_tensor *floats[2] = {f, f}, *ints[2] = {i, i};
    bool (*supports)(porta_device *, const ir_prim *, const porta_tensor *const *, int) =
        device->ops->supports;
    CHECK(supports(device, &(ir_prim){.kind = PRIM_BINARY, .op = PORTA_ADD}, floats, 2));
    CHECK(supports(device, &(ir_prim){.kind = PRIM_REDUCE, .op = PORTA_REDUCE_SUM}, floats, 1));
    CHECK(supports(device, &(ir_prim){.kind = PRIM_MATMUL}, floats, 2));
    /* integer division reports division by zero eagerly: not in a module */
    CHECK(!supports(device, &(ir_prim){.kind = PRIM_BINARY, .op = PORTA_FLOOR_DIVIDE}, ints, 2));
    CHECK(!supports(device, &(ir_prim){.kind = PRIM_REDUCE, .op = PORTA_REDUCE_ARGMAX}, floats, 1));
    CHECK(!supports(device, &(ir_prim){.kind = PRIM_MATMUL}, ints, 2));
    CHECK(!supports(device, &(ir_prim){.kind = PRIM_RANDOM}, floats, 0));
    porta_tensor_release(f);
    porta_tensor_release(i);
}

static porta_tensor *int64s(porta_device *device, int rank, const int64_t *sizes,
                            const int64_t *values) {
    porta_tensor *t = NULL;
    porta_status *status = porta_tensor_from_host(device, PORTA_I64, rank, sizes, values, &t);
    if (status) {
        test_fail(__FILE__, __LINE__, "an int64 tensor: %s", porta_status_message(status));
        porta_status_free(status);
    }
    return t;
}

TEST(test_pjrt_pad_gather_index_select_and_sort_run_as_modules) {
    porta_device *device = test_backend_device("pjrt", __func__);
    if (!device) return;
    const porta_tensor *f[2] = {NULL, NULL};
    const int64_t sizes[2] = {2, 3}, idx_sizes[2] = {2, 2}, one[1] = {2};
    const float host[6] = {3, NAN, 1, -1, 5, -1};
    porta_tensor *x = NULL;
    CHECK_OK(porta_tensor_from_host(device, PORTA_F32, 2, sizes, host, &x));
    porta_tensor *index = int64s(device, 2, idx_sizes, (const int64_t[]){2, 0, 1, 1});
    porta_tensor *rows = int64s(device, 1, one, (const int64_t[]){1, 0});
    f[0] = x;
    f[1] = index;
    bool (*supports)(porta_device *, const ir_prim *, const porta_tensor *const *, int) =
        device->ops->supports;
    CHECK(supports(device, &(ir_prim){.kind = PRIM_PAD}, f, 1));
    CHECK(supports(device, &(ir_prim){.kind = PRIM_SORT}, f, 1));
    CHECK(supports(device, &(ir_prim){.kind = PRIM_GATHER, .axis = 1}, f, 2));
    CHECK(supports(device, &(ir_prim){.kind = PRIM_INDEX_SELECT}, f, 2));

    porta_tensor *padded = NULL, *gathered = NULL, *selected = NULL, *order = NULL;
    CHECK_OK(porta_pad(x, (const int64_t[]){0, 1, -1, 1}, 7, &padded));
    float p[9];
    CHECK_OK(porta_tensor_to_host(padded, p, sizeof p));
    const float want_p[9] = {NAN, 1, 7, 5, -1, 7, 7, 7, 7};
    for (int i = 0; i < 9; i++)
        CHECK_MSG(i == 0 ? p[i] != p[i] : p[i] == want_p[i], "pad element %d: %g", i, p[i]);
    CHECK_OK(porta_gather(x, 1, index, &gathered));
    float g[4];
    CHECK_OK(porta_tensor_to_host(gathered, g, sizeof g));
    CHECK(g[0] == 1 && g[1] == 3 && g[2] == 5 && g[3] == 5);
    CHECK_OK(porta_index_select(x, 0, rows, &selected));
    float s[6];
    CHECK_OK(porta_tensor_to_host(selected, s, sizeof s));
    CHECK(s[0] == -1 && s[2] == -1 && s[3] == 3 && s[5] == 1);
    CHECK_OK(porta_sort(x, 1, PORTA_SORT_ASCENDING, NULL, &order));
    int64_t o[6];
    CHECK_OK(porta_tensor_to_host(order, o, sizeof o));
    /* NaN last; the tied -1s of row 1 keep their order */
    CHECK(o[0] == 2 && o[1] == 0 && o[2] == 1 && o[3] == 0 && o[4] == 2 && o[5] == 1);

    porta_tensor *bad = int64s(device, 1, one, (const int64_t[]){0, 2}), *none = NULL;
    CHECK_ERR(porta_index_select(x, 0, bad, &none), PORTA_ERR_OUT_OF_RANGE,
              "index 2 is out of bounds for dimension 0 with size 2");
    porta_tensor *list[] = {x, index, rows, padded, gathered, selected, order, bad};
    for (size_t i = 0; i < sizeof list / sizeof *list; i++) porta_tensor_release(list[i]);
}
