/* The OpenCL backend's hand-written kernels (matmul, conv, gather/scatter/
 * index_select, pad, random, sort, integer division and power, erfinv,
 * argmax/argmin, the special functions, the factorisations) against the CPU
 * device, on sizes that are not multiples of the tiles, transposed and offset
 * views, broadcast batches, every dtype the CPU accepts, and the CPU's
 * errors.
 *
 * Without an OpenCL device the tests pass with a note only when no OpenCL
 * loader with an installed driver (ICD) is present and PORTA_REQUIRE_OPENCL
 * is unset; otherwise a missing device fails them. */
#include <dirent.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "porta_place.h"
#include "test.h"

/* ---- the device ---- */

/* Whether an OpenCL loader loads and a driver is registered for it. */
static bool opencl_installed(const char **why) {
    void *loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!loader) {
        *why = "no OpenCL loader (libOpenCL.so.1)";
        return false;
    }
    dlclose(loader);
    const char *dir_name = getenv("OCL_ICD_VENDORS");
    DIR *dir = opendir(dir_name && dir_name[0] ? dir_name : "/etc/OpenCL/vendors");
    bool found = false;
    for (struct dirent *e; dir && !found && (e = readdir(dir));) {
        size_t n = strlen(e->d_name);
        found = n > 4 && strcmp(e->d_name + n - 4, ".icd") == 0;
    }
    if (dir) closedir(dir);
    if (!found) *why = "an OpenCL loader but no driver (.icd) registered";
    return found;
}

/* The first OpenCL device, or NULL: then the test either failed (a device
 * was expected) or has printed why it does not apply. */
static porta_device *opencl_device(const char *test) {
    for (int i = 0; i < porta_device_count(); i++) {
        porta_device *device;
        porta_device_info info;
        if (porta_device_get(i, &device) || porta_device_info_get(device, &info)) continue;
        if (strcmp(info.backend, "opencl") == 0) return device;
    }
    const char *why = "";
    bool required = getenv("PORTA_REQUIRE_OPENCL") != NULL;
    if (required || opencl_installed(&why)) {
        test_fail(__FILE__, __LINE__, "%s: no OpenCL device, though %s", test,
                  required ? "PORTA_REQUIRE_OPENCL is set" : "an OpenCL driver is installed");
    } else {
        fprintf(stderr, "%s: not run on OpenCL: %s\n", test, why);
    }
    return NULL;
}

/* A test that runs on the OpenCL device, with its programs built into a
 * temporary kernel cache: OPENCL_TEST(name) { ...device... }. */
#define OPENCL_TEST(name)                                                   \
    static void name##_on(porta_device *device);                            \
    TEST(name) {                                                            \
        porta_device *device = opencl_device(#name);                        \
        if (!device) return;                                                \
        test_cache_begin();                                                 \
        name##_on(device);                                                  \
        test_cache_end();                                                   \
    }                                                                       \
    static void name##_on(porta_device *device)

/* ---- tensors on both devices ---- */

/* A pair: the same values on the CPU and on the OpenCL device. */
typedef struct pair {
    porta_tensor *cpu, *cl;
} pair;

static void pair_release(pair *p) {
    porta_tensor_release(p->cpu);
    porta_tensor_release(p->cl);
    p->cpu = p->cl = NULL;
}

/* A contiguous copy of a CPU tensor on `device`. */
static porta_tensor *copy_to(porta_device *device, const porta_tensor *t) {
    porta_tensor *out = NULL;
    porta_status *status = porta_tensor_empty(device, porta_tensor_dtype(t), porta_tensor_rank(t),
                                              porta_tensor_sizes(t), &out);
    if (!status) status = porta_copy(t, out);
    if (status) {
        test_fail(__FILE__, __LINE__, "copy to the OpenCL device: %s", porta_status_message(status));
        porta_status_free(status);
        porta_tensor_release(out);
        return NULL;
    }
    return out;
}

static pair random_pair(porta_device *device, test_rng *rng, porta_dtype dtype, int rank,
                        const int64_t *sizes, double low, double high) {
    pair p = {test_random_tensor(rng, dtype, rank, sizes, low, high), NULL};
    if (p.cpu) p.cl = copy_to(device, p.cpu);
    return p;
}

/* values[] (row-major, doubles) as dtype on both devices. */
static pair values_pair(porta_device *device, porta_dtype dtype, int rank, const int64_t *sizes,
                        const double *values) {
    pair p = {NULL, NULL};
    porta_tensor *wide = NULL;
    porta_status *status =
        porta_tensor_from_host(test_cpu(), PORTA_F64, rank, sizes, values, &wide);
    if (!status) status = porta_cast(wide, dtype, &p.cpu);
    porta_tensor_release(wide);
    if (status) {
        test_fail(__FILE__, __LINE__, "values: %s", porta_status_message(status));
        porta_status_free(status);
        return p;
    }
    p.cl = copy_to(device, p.cpu);
    return p;
}

/* Records a failed call; returns whether it succeeded. */
static bool succeeded(porta_status *status, const char *what) {
    if (!status) return true;
    test_fail(__FILE__, __LINE__, "%s: %s", what, porta_status_message(status));
    porta_status_free(status);
    return false;
}

/* The same view of both: the last two axes swapped. */
static pair transposed(const pair *p) {
    pair out = {NULL, NULL};
    int rank = porta_tensor_rank(p->cpu);
    int dims[PORTA_MAX_RANK];
    for (int d = 0; d < rank; d++) dims[d] = d;
    dims[rank - 2] = rank - 1;
    dims[rank - 1] = rank - 2;
    succeeded(porta_permute(p->cpu, dims, &out.cpu), "permute");
    succeeded(porta_permute(p->cl, dims, &out.cl), "permute");
    return out;
}

/* The same view of both: elements [start, start + count) of `axis`. */
static pair sliced(const pair *p, int axis, int64_t start, int64_t count) {
    pair out = {NULL, NULL};
    succeeded(porta_slice(p->cpu, axis, start, start + count, 1, &out.cpu), "slice");
    succeeded(porta_slice(p->cl, axis, start, start + count, 1, &out.cl), "slice");
    return out;
}

/* Whether the two results hold the same shape and values within
 * tolerance (0, 0: exactly, NaN matching NaN). */
static bool same(const char *what, const porta_tensor *got, const porta_tensor *want, double rtol,
                 double atol) {
    if (!got || !want) return false;
    if (porta_tensor_rank(got) != porta_tensor_rank(want) ||
        porta_tensor_dtype(got) != porta_tensor_dtype(want) ||
        memcmp(porta_tensor_sizes(got), porta_tensor_sizes(want),
               (size_t)porta_tensor_rank(got) * sizeof(int64_t)) != 0) {
        test_fail(__FILE__, __LINE__, "%s: shape or dtype differs from the CPU's", what);
        return false;
    }
    double *g = test_to_doubles(got), *w = test_to_doubles(want);
    bool ok = test_close(what, g, w, porta_tensor_numel(got), rtol, atol);
    free(g);
    free(w);
    return ok;
}

static bool has_fp64(porta_device *device) {
    porta_tensor *t = NULL, *out = NULL;
    porta_status *status = porta_tensor_full(device, PORTA_F64, 0, NULL, 1.0, &t);
    if (!status) status = porta_unary(PORTA_NEG, t, &out);
    porta_tensor_release(t);
    porta_tensor_release(out);
    if (status) porta_status_free(status);
    return status == NULL;
}

static const porta_dtype all_dtypes[] = {PORTA_BOOL, PORTA_U8,   PORTA_I8,  PORTA_I16,
                                         PORTA_I32,  PORTA_I64,  PORTA_F16, PORTA_BF16,
                                         PORTA_F32,  PORTA_F64};
#define DTYPE_COUNT (int)(sizeof all_dtypes / sizeof all_dtypes[0])

/* Whether the device takes the dtype; float64 only with fp64. */
static bool usable(porta_device *device, porta_dtype dtype) {
    return dtype != PORTA_F64 || has_fp64(device);
}

/* A float dtype's tolerance for a sum of `terms` products. */
static double sum_rtol(porta_dtype dtype, int64_t terms) {
    return test_rtol(dtype) * (dtype == PORTA_F16 || dtype == PORTA_BF16 ? 4.0 : (double)terms);
}

/* ---- matmul ---- */

static void check_matmul(porta_device *device, const char *what, const pair *a, const pair *b,
                         porta_dtype dtype, int64_t k) {
    porta_tensor *want = NULL, *got = NULL;
    CHECK_OK(porta_matmul(a->cpu, b->cpu, &want));
    porta_status *status = porta_matmul(a->cl, b->cl, &got);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s %s: %s", what, porta_dtype_name(dtype),
                  porta_status_message(status));
        porta_status_free(status);
    } else {
        bool floats = porta_dtype_is_float(dtype);
        same(what, got, want, floats ? sum_rtol(dtype, k) : 0, floats ? 1e-5 * (double)k : 0);
    }
    porta_tensor_release(want);
    porta_tensor_release(got);
}

OPENCL_TEST(test_opencl_matmul_every_dtype_odd_sizes_views_and_broadcast) {
    test_rng rng = test_rng_make(71);
    for (int t = 1; t < DTYPE_COUNT; t++) { /* every dtype but bool */
        porta_dtype dtype = all_dtypes[t];
        if (!usable(device, dtype)) continue;
        /* a: [3, 70, 45] read transposed from [3, 45, 70]; b: [45, 33] as the
         * last 33 columns of [45, 40] (an offset view), broadcast over the
         * batch. */
        int64_t a_sizes[3] = {3, 45, 70}, b_sizes[2] = {45, 40};
        pair a_store = random_pair(device, &rng, dtype, 3, a_sizes, -2, 2);
        pair b_store = random_pair(device, &rng, dtype, 2, b_sizes, -2, 2);
        pair a = transposed(&a_store);
        pair b = sliced(&b_store, 1, 7, 33);
        check_matmul(device, "matmul [3,70,45] @ [45,33]", &a, &b, dtype, 45);
        /* Square blocks and more: 130 x 129 x 67, both contiguous. */
        int64_t c_sizes[2] = {130, 67}, d_sizes[2] = {67, 129};
        pair c = random_pair(device, &rng, dtype, 2, c_sizes, -1, 1);
        pair d = random_pair(device, &rng, dtype, 2, d_sizes, -1, 1);
        check_matmul(device, "matmul [130,67] @ [67,129]", &c, &d, dtype, 67);
        /* K = 0 gives zeros; a 1 x 1 product. */
        int64_t e_sizes[2] = {5, 0}, f_sizes[2] = {0, 3}, g_sizes[2] = {1, 1};
        pair e = random_pair(device, &rng, dtype, 2, e_sizes, -1, 1);
        pair f = random_pair(device, &rng, dtype, 2, f_sizes, -1, 1);
        check_matmul(device, "matmul k = 0", &e, &f, dtype, 1);
        pair g = random_pair(device, &rng, dtype, 2, g_sizes, -3, 3);
        check_matmul(device, "matmul 1 x 1", &g, &g, dtype, 1);
        pair *all[] = {&a_store, &b_store, &a, &b, &c, &d, &e, &f, &g};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pair_release(all[i]);
    }
}

/* ---- conv ---- */

/* x [N, C, spatial...] as a channels-last view: permuted from
 * [N, spatial..., C]. */
static pair channels_last(porta_device *device, test_rng *rng, porta_dtype dtype, int rank,
                          const int64_t *sizes) {
    int64_t stored[PORTA_MAX_RANK];
    int dims[PORTA_MAX_RANK];
    stored[0] = sizes[0];
    for (int d = 2; d < rank; d++) stored[d - 1] = sizes[d];
    stored[rank - 1] = sizes[1];
    dims[0] = 0;
    dims[1] = rank - 1;
    for (int d = 2; d < rank; d++) dims[d] = d - 1;
    pair store = random_pair(device, rng, dtype, rank, stored, -1, 1);
    pair out = {NULL, NULL};
    if (store.cpu && store.cl) {
        succeeded(porta_permute(store.cpu, dims, &out.cpu), "permute");
        succeeded(porta_permute(store.cl, dims, &out.cl), "permute");
    }
    pair_release(&store);
    return out;
}

OPENCL_TEST(test_opencl_conv_1d_2d_3d_groups_stride_padding_dilation_bias) {
    test_rng rng = test_rng_make(72);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_BF16};
    /* (input channels, output channels, groups): few output channels per
     * group (the direct kernel) and many, not a multiple of the tile (the
     * implicit GEMM). */
    const int64_t channels[][3] = {{4, 6, 2}, {4, 6, 1}, {8, 34, 2}, {3, 20, 1}};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        if (!usable(device, dtype)) continue;
        for (int spatial = 1; spatial <= 3; spatial++) {
            for (size_t c = 0; c < sizeof channels / sizeof channels[0]; c++) {
                int64_t groups = channels[c][2];
                int64_t x_sizes[5] = {2, channels[c][0], 9, 7, 5};
                int64_t w_sizes[5] = {channels[c][1], channels[c][0] / groups, 3, 2, 3};
                porta_conv_params params;
                memset(&params, 0, sizeof params);
                params.groups = groups;
                for (int s = 0; s < spatial; s++) {
                    params.stride[s] = 1 + s % 2;
                    params.padding[s] = s == 0 ? 1 : 0;
                    params.dilation[s] = s == 2 ? 2 : 1;
                }
                int rank = spatial + 2;
                pair x = c % 2 ? channels_last(device, &rng, dtype, rank, x_sizes)
                               : random_pair(device, &rng, dtype, rank, x_sizes, -1, 1);
                pair w = random_pair(device, &rng, dtype, rank, w_sizes, -1, 1);
                pair bias = random_pair(device, &rng, dtype, 1, &w_sizes[0], -1, 1);
                int64_t terms = w_sizes[1] * 18;
                for (int with_bias = 0; with_bias < 2; with_bias++) {
                    porta_tensor *want = NULL, *got = NULL;
                    CHECK_OK(porta_conv(x.cpu, w.cpu, with_bias ? bias.cpu : NULL, &params,
                                        &want));
                    porta_status *status =
                        porta_conv(x.cl, w.cl, with_bias ? bias.cl : NULL, &params, &got);
                    if (status) {
                        test_fail(__FILE__, __LINE__, "conv %dd %s: %s", spatial,
                                  porta_dtype_name(dtype), porta_status_message(status));
                        porta_status_free(status);
                    } else {
                        same("conv", got, want, sum_rtol(dtype, terms), 1e-4);
                    }
                    porta_tensor_release(want);
                    porta_tensor_release(got);
                }
                pair_release(&x);
                pair_release(&w);
                pair_release(&bias);
            }
        }
    }
}

/* ---- gather, index_select, scatter ---- */

OPENCL_TEST(test_opencl_gather_index_select_scatter_every_dtype) {
    test_rng rng = test_rng_make(73);
    for (int t = 0; t < DTYPE_COUNT; t++) {
        porta_dtype dtype = all_dtypes[t];
        if (!usable(device, dtype)) continue;
        /* x: [5, 6] as the transpose of [6, 5]; index [4, 6] along axis 0
         * with repeats, so scatter meets duplicates. */
        int64_t x_sizes[2] = {6, 5}, index_sizes[2] = {4, 6}, select_size = 7;
        pair x_store = random_pair(device, &rng, dtype, 2, x_sizes, -4, 4);
        pair x = transposed(&x_store);
        pair index = random_pair(device, &rng, PORTA_I64, 2, index_sizes, 0, 0);
        double index_values[24], select_values[7];
        for (int i = 0; i < 24; i++) index_values[i] = (double)test_int(&rng, 0, 4);
        for (int i = 0; i < 7; i++) select_values[i] = (double)test_int(&rng, 0, 5);
        pair_release(&index);
        index = values_pair(device, PORTA_I64, 2, index_sizes, index_values);
        pair select = values_pair(device, PORTA_I64, 1, &select_size, select_values);
        pair src = random_pair(device, &rng, dtype, 2, index_sizes, -4, 4);
        porta_tensor *want = NULL, *got = NULL;
        CHECK_OK(porta_gather(x.cpu, 0, index.cpu, &want));
        CHECK_OK(porta_gather(x.cl, 0, index.cl, &got));
        same("gather", got, want, 0, 0);
        porta_tensor_release(want);
        porta_tensor_release(got);
        want = got = NULL;
        CHECK_OK(porta_index_select(x.cpu, 1, select.cpu, &want));
        CHECK_OK(porta_index_select(x.cl, 1, select.cl, &got));
        same("index_select", got, want, 0, 0);
        porta_tensor_release(want);
        porta_tensor_release(got);
        for (int reduce = PORTA_SCATTER_NONE; reduce <= PORTA_SCATTER_AMIN; reduce++) {
            want = got = NULL;
            CHECK_OK(porta_scatter(x.cpu, 0, index.cpu, src.cpu, reduce, &want));
            porta_status *status = porta_scatter(x.cl, 0, index.cl, src.cl, reduce, &got);
            if (status) {
                test_fail(__FILE__, __LINE__, "scatter %d %s: %s", reduce, porta_dtype_name(dtype),
                          porta_status_message(status));
                porta_status_free(status);
            } else {
                same("scatter", got, want, 0, 0); /* the same serial order: exact */
            }
            porta_tensor_release(want);
            porta_tensor_release(got);
        }
        pair *all[] = {&x_store, &x, &index, &select, &src};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) pair_release(all[i]);
    }
}

/* Scatter and gather along every axis of 3-D tensors, the index smaller
 * than x on the other axes and src a transposed view: duplicates along the
 * axis combine in the CPU's order. */
OPENCL_TEST(test_opencl_scatter_gather_along_each_axis_of_3d) {
    test_rng rng = test_rng_make(78);
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_I64, PORTA_F16, PORTA_U8};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        int64_t x_sizes[3] = {4, 5, 6};
        pair x = random_pair(device, &rng, dtype, 3, x_sizes, -3, 3);
        for (int axis = 0; axis < 3; axis++) {
            int64_t index_sizes[3] = {3, 4, 5};
            index_sizes[axis] = 7; /* longer than x along the axis: repeats */
            double values[7 * 4 * 5];
            int64_t numel = index_sizes[0] * index_sizes[1] * index_sizes[2];
            for (int64_t i = 0; i < numel; i++)
                values[i] = (double)test_int(&rng, 0, x_sizes[axis] - 1);
            pair index = values_pair(device, PORTA_I64, 3, index_sizes, values);
            int64_t src_sizes[3] = {index_sizes[0], index_sizes[2], index_sizes[1]};
            pair src_store = random_pair(device, &rng, dtype, 3, src_sizes, -3, 3);
            pair src = transposed(&src_store);
            porta_tensor *want = NULL, *got = NULL;
            CHECK_OK(porta_gather(x.cpu, axis, index.cpu, &want));
            CHECK_OK(porta_gather(x.cl, axis, index.cl, &got));
            same("gather 3-d", got, want, 0, 0);
            porta_tensor_release(want);
            porta_tensor_release(got);
            for (int reduce = PORTA_SCATTER_NONE; reduce <= PORTA_SCATTER_AMIN; reduce++) {
                want = got = NULL;
                CHECK_OK(porta_scatter(x.cpu, axis, index.cpu, src.cpu, reduce, &want));
                CHECK_OK(porta_scatter(x.cl, axis, index.cl, src.cl, reduce, &got));
                same("scatter 3-d", got, want, 0, 0);
                porta_tensor_release(want);
                porta_tensor_release(got);
            }
            pair_release(&index);
            pair_release(&src_store);
            pair_release(&src);
        }
        pair_release(&x);
    }
}

OPENCL_TEST(test_opencl_index_out_of_range_reports_the_cpus_error) {
    int64_t x_sizes[2] = {3, 4}, index_sizes[2] = {2, 4};
    test_rng rng = test_rng_make(74);
    pair x = random_pair(device, &rng, PORTA_F32, 2, x_sizes, -1, 1);
    const double bad[8] = {0, 1, 2, 1, 2, 7, -1, 0}; /* the first bad one is 7 */
    pair index = values_pair(device, PORTA_I64, 2, index_sizes, bad);
    porta_tensor *out = NULL;
    porta_status *want = porta_gather(x.cpu, 0, index.cpu, &out);
    porta_status *got = porta_gather(x.cl, 0, index.cl, &out);
    CHECK(want && got);
    if (want && got) {
        CHECK(porta_status_code(got) == PORTA_ERR_OUT_OF_RANGE);
        CHECK_MSG(strcmp(porta_status_message(got), porta_status_message(want)) == 0,
                  "OpenCL says \"%s\", the CPU \"%s\"", porta_status_message(got),
                  porta_status_message(want));
    }
    porta_status_free(want);
    porta_status_free(got);
    CHECK_ERR(porta_scatter(x.cl, 0, index.cl, x.cl, PORTA_SCATTER_ADD, &out),
              PORTA_ERR_OUT_OF_RANGE, "index 7 is out of bounds for dimension 0 with size 3");
    pair_release(&x);
    pair_release(&index);
}

/* ---- pad ---- */

OPENCL_TEST(test_opencl_pad_grows_and_crops_every_dtype) {
    test_rng rng = test_rng_make(75);
    for (int t = 0; t < DTYPE_COUNT; t++) {
        porta_dtype dtype = all_dtypes[t];
        if (!usable(device, dtype)) continue;
        int64_t sizes[3] = {3, 5, 4};
        pair store = random_pair(device, &rng, dtype, 3, sizes, -5, 5);
        pair x = transposed(&store); /* [3, 4, 5] */
        const int64_t pads[6] = {1, 0, -1, 2, 2, -3};
        porta_tensor *want = NULL, *got = NULL;
        CHECK_OK(porta_pad(x.cpu, pads, 3.0, &want));
        CHECK_OK(porta_pad(x.cl, pads, 3.0, &got));
        same("pad", got, want, 0, 0);
        porta_tensor_release(want);
        porta_tensor_release(got);
        pair_release(&store);
        pair_release(&x);
    }
}

/* ---- random ---- */

OPENCL_TEST(test_opencl_random_uniform_is_the_cpus_bit_for_bit_normal_within_ulps) {
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F16, PORTA_BF16, PORTA_F64};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        if (!usable(device, dtype)) continue;
        for (int normal = 0; normal < 2; normal++) {
            /* A transposed destination: element order is the logical one. */
            int64_t sizes[2] = {37, 11};
            porta_tensor *cpu_store = NULL, *cl_store = NULL;
            CHECK_OK(porta_tensor_empty(test_cpu(), dtype, 2, sizes, &cpu_store));
            CHECK_OK(porta_tensor_empty(device, dtype, 2, sizes, &cl_store));
            pair store = {cpu_store, cl_store};
            pair view = transposed(&store);
            uint64_t seed = 0x1234567890abcdefULL, offset = 5; /* starts mid-block */
            if (normal) {
                CHECK_OK(porta_random_normal(view.cpu, seed, offset, 0.5, 2.0));
                CHECK_OK(porta_random_normal(view.cl, seed, offset, 0.5, 2.0));
            } else {
                CHECK_OK(porta_random_uniform(view.cpu, seed, offset, -1.5, 0.1));
                CHECK_OK(porta_random_uniform(view.cl, seed, offset, -1.5, 0.1));
            }
            double rtol = normal ? (dtype == PORTA_F64 ? 1e-13 : 4 * test_rtol(dtype)) : 0;
            same(normal ? "random normal" : "random uniform", view.cl, view.cpu, rtol,
                 normal ? rtol : 0);
            pair_release(&store);
            pair_release(&view);
        }
    }
}

/* ---- sort ---- */

static void check_sort(porta_device *device, const char *what, const pair *x, int axis) {
    for (int order = PORTA_SORT_ASCENDING; order <= PORTA_SORT_DESCENDING; order++) {
        porta_tensor *want = NULL, *got = NULL;
        CHECK_OK(porta_sort(x->cpu, axis, order, NULL, &want));
        porta_status *status = porta_sort(x->cl, axis, order, NULL, &got);
        if (status) {
            test_fail(__FILE__, __LINE__, "%s: %s", what, porta_status_message(status));
            porta_status_free(status);
        } else {
            same(what, got, want, 0, 0); /* the stable permutation is unique */
        }
        porta_tensor_release(want);
        porta_tensor_release(got);
    }
}

OPENCL_TEST(test_opencl_sort_stable_with_nan_ties_and_long_rows) {
    test_rng rng = test_rng_make(76);
    for (int t = 0; t < DTYPE_COUNT; t++) {
        porta_dtype dtype = all_dtypes[t];
        if (!usable(device, dtype)) continue;
        /* Few distinct values (many ties), -0.0 beside 0.0 and NaNs. */
        int64_t sizes[2] = {5, 37};
        double values[5 * 37];
        for (int i = 0; i < 5 * 37; i++) values[i] = (double)test_int(&rng, -3, 3);
        if (porta_dtype_is_float(dtype)) {
            values[3] = NAN;
            values[40] = -0.0;
            values[41] = NAN;
        }
        pair x = values_pair(device, dtype, 2, sizes, values);
        check_sort(device, "sort rows", &x, 1);
        check_sort(device, "sort columns", &x, 0);
        pair xt = transposed(&x);
        check_sort(device, "sort a transposed view", &xt, 1);
        pair_release(&x);
        pair_release(&xt);
    }
    /* A scalar and rows of one. */
    pair scalar = values_pair(device, PORTA_F32, 0, NULL, (const double[]){2.5});
    check_sort(device, "sort a scalar", &scalar, 0);
    pair_release(&scalar);
    int64_t ones[2] = {4, 1};
    pair single = random_pair(device, &rng, PORTA_I32, 2, ones, -5, 5);
    check_sort(device, "sort rows of one", &single, 1);
    pair_release(&single);
    /* One long row, not a power of two. */
    int64_t n = 3001;
    pair row = random_pair(device, &rng, PORTA_F32, 1, &n, -10, 10);
    check_sort(device, "sort a row of 3001", &row, 0);
    pair_release(&row);
}

/* ---- integer division and power, erfinv, argmax/argmin ---- */

OPENCL_TEST(test_opencl_integer_division_power_and_their_errors) {
    const porta_dtype dtypes[] = {PORTA_U8, PORTA_I8, PORTA_I16, PORTA_I32, PORTA_I64};
    const porta_binary_op ops[] = {PORTA_FLOOR_DIVIDE, PORTA_REMAINDER, PORTA_FMOD, PORTA_POW};
    int64_t sizes[2] = {3, 8}, b_size = 8;
    double a_values[24], b_values[8] = {1, -1, 2, -3, 5, 7, -128, 3};
    for (int i = 0; i < 24; i++) a_values[i] = (double)(i * 13 % 50 - 25);
    a_values[0] = -128;
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        pair a = values_pair(device, dtype, 2, sizes, a_values);
        pair b = values_pair(device, dtype, 1, &b_size, b_values); /* broadcast over rows */
        for (size_t o = 0; o < sizeof ops / sizeof ops[0]; o++) {
            bool negative_power = ops[o] == PORTA_POW && dtype != PORTA_U8;
            porta_tensor *want = NULL, *got = NULL;
            porta_status *want_status = porta_binary(ops[o], a.cpu, b.cpu, &want);
            porta_status *got_status = porta_binary(ops[o], a.cl, b.cl, &got);
            CHECK(!want_status == !got_status);
            CHECK(!got_status == !negative_power);
            if (want_status && got_status)
                CHECK_MSG(strcmp(porta_status_message(got_status),
                                 porta_status_message(want_status)) == 0,
                          "OpenCL says \"%s\", the CPU \"%s\"", porta_status_message(got_status),
                          porta_status_message(want_status));
            if (!want_status && !got_status) same(porta_binary_op_name(ops[o]), got, want, 0, 0);
            porta_status_free(want_status);
            porta_status_free(got_status);
            porta_tensor_release(want);
            porta_tensor_release(got);
        }
        /* Division by zero, in one element of eight. */
        double divisors[8] = {1, 2, 3, 0, 5, 6, 7, 8};
        pair zero = values_pair(device, dtype, 1, &b_size, divisors);
        porta_tensor *out = NULL;
        CHECK_ERR(porta_binary(PORTA_FLOOR_DIVIDE, a.cl, zero.cl, &out), PORTA_ERR_INVALID_ARGUMENT,
                  "integer division by zero");
        CHECK_ERR(porta_binary(PORTA_REMAINDER, a.cl, zero.cl, &out), PORTA_ERR_INVALID_ARGUMENT,
                  "integer division by zero");
        pair_release(&zero);
        pair_release(&a);
        pair_release(&b);
    }
}

OPENCL_TEST(test_opencl_erfinv_every_float_dtype) {
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64, PORTA_F16, PORTA_BF16};
    int64_t n = 12;
    const double values[12] = {-1, -0.999, -0.9, -0.5, -1e-3, 0, 0.25, 0.5, 0.75, 0.99999, 1, 2};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        if (!usable(device, dtypes[t])) continue;
        pair x = values_pair(device, dtypes[t], 1, &n, values);
        porta_tensor *want = NULL, *got = NULL;
        CHECK_OK(porta_unary(PORTA_ERFINV, x.cpu, &want));
        CHECK_OK(porta_unary(PORTA_ERFINV, x.cl, &got));
        same("erfinv", got, want, dtypes[t] == PORTA_F64 ? 1e-12 : test_rtol(dtypes[t]), 1e-12);
        porta_tensor_release(want);
        porta_tensor_release(got);
        pair_release(&x);
    }
}

OPENCL_TEST(test_opencl_argmax_argmin_nan_ties_axes_keepdim) {
    test_rng rng = test_rng_make(77);
    for (int t = 1; t < DTYPE_COUNT; t++) {
        porta_dtype dtype = all_dtypes[t];
        if (!usable(device, dtype)) continue;
        int64_t sizes[3] = {4, 9, 6};
        double values[4 * 9 * 6];
        for (int i = 0; i < 4 * 9 * 6; i++) values[i] = (double)test_int(&rng, -2, 2);
        if (porta_dtype_is_float(dtype)) {
            values[10] = NAN;
            values[11] = NAN;
            values[100] = -0.0;
        }
        pair store = values_pair(device, dtype, 3, sizes, values);
        pair x = transposed(&store); /* [4, 6, 9] */
        for (int op = PORTA_REDUCE_ARGMAX; op <= PORTA_REDUCE_ARGMIN; op++) {
            for (int axis = -1; axis < 3; axis++) {
                for (int keepdim = 0; keepdim < 2; keepdim++) {
                    porta_tensor *want = NULL, *got = NULL;
                    int count = axis < 0 ? 0 : 1;
                    CHECK_OK(porta_reduce(op, x.cpu, &axis, count, keepdim, &want));
                    CHECK_OK(porta_reduce(op, x.cl, &axis, count, keepdim, &got));
                    same(porta_reduce_op_name(op), got, want, 0, 0);
                    porta_tensor_release(want);
                    porta_tensor_release(got);
                }
            }
        }
        pair_release(&store);
        pair_release(&x);
    }
}

/* ---- the special functions ---- */

/* Whether nothing was placed on another device since the last reset. */
static void nothing_placed(const char *what) {
    porta_placement_count counts[4];
    int n = porta_placement_counts(counts, 4);
    CHECK_MSG(n == 0, "%s: %d ops placed on another device (first: %s)", what, n,
              n ? counts[0].op : "");
    porta_placement_counts_reset();
}

/* Whether float64 runs on the device itself (with PORTA_OPENCL_FP64=0 it is
 * placed on the CPU, so has_fp64 alone does not say). */
static bool float64_native(porta_device *device) {
    porta_placement_counts_reset();
    porta_placement_count counts[4];
    bool native = has_fp64(device) && porta_placement_counts(counts, 4) == 0;
    porta_placement_counts_reset();
    return native;
}

/* Float64 within a few units of the CPU's numerics (the device's libm
 * differs in the last bits); float32 within float32's rounding; float
 * devices compute in float, so within 1e-5 of the CPU on these points. */
static double special_rtol(porta_device *device, porta_dtype dtype) {
    if (dtype == PORTA_F64) return 1e-10;
    return float64_native(device) ? test_rtol(dtype) : 1e-5;
}

OPENCL_TEST(test_opencl_special_functions_match_the_cpu) {
    const double xs[] = {-30, -8.5, -2.5, -1, -0.3, 0, 1e-12, 0.02, 0.3, 0.5, 0.97, 0.999,
                         1, 1.5, 2.5, 5, 9.75, 21, 60, INFINITY, -INFINITY, NAN};
    int64_t n = (int64_t)(sizeof xs / sizeof xs[0]);
    /* binary: every x against each second argument (degrees, a, q) */
    const double seconds[] = {-1, 0, 1, 2, 3.7, 7, 12};
    int64_t sizes[2] = {(int64_t)(sizeof seconds / sizeof seconds[0]), n}, one = sizes[0];
    const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    for (size_t t = 0; t < sizeof dtypes / sizeof dtypes[0]; t++) {
        porta_dtype dtype = dtypes[t];
        if (dtype == PORTA_F64 && !float64_native(device)) continue;
        double rtol = special_rtol(device, dtype), atol = dtype == PORTA_F64 ? 1e-13 : 1e-6;
        pair x = values_pair(device, dtype, 1, &n, xs);
        pair second = values_pair(device, dtype, 1, &one, seconds);
        pair column = {NULL, NULL};
        int64_t column_sizes[2] = {one, 1};
        succeeded(porta_reshape(second.cpu, 2, column_sizes, &column.cpu), "reshape");
        succeeded(porta_reshape(second.cl, 2, column_sizes, &column.cl), "reshape");
        for (int op = PORTA_DIGAMMA; op < PORTA_UNARY_OP_COUNT; op++) {
            if (op >= PORTA_BESSEL_J0 && op <= PORTA_BESSEL_Y1) continue; /* still placed */
            porta_tensor *want = NULL, *got = NULL;
            CHECK_OK(porta_unary(op, x.cpu, &want));
            CHECK_OK(porta_unary(op, x.cl, &got));
            same(porta_unary_op_name(op), got, want, rtol, atol);
            nothing_placed(porta_unary_op_name(op));
            porta_tensor_release(want);
            porta_tensor_release(got);
        }
        for (int op = PORTA_IGAMMA; op < PORTA_BINARY_OP_COUNT; op++) {
            porta_tensor *want = NULL, *got = NULL;
            bool polynomial = op >= PORTA_CHEBYSHEV_T;
            /* polynomials: p(x, n); the others f(second, x) */
            const pair *a = polynomial ? &x : &column, *b = polynomial ? &column : &x;
            CHECK_OK(porta_binary(op, a->cpu, b->cpu, &want));
            CHECK_OK(porta_binary(op, a->cl, b->cl, &got));
            same(porta_binary_op_name(op), got, want, rtol, polynomial ? atol * 1e3 : atol);
            nothing_placed(porta_binary_op_name(op));
            porta_tensor_release(want);
            porta_tensor_release(got);
        }
        pair_release(&column);
        pair_release(&second);
        pair_release(&x);
    }
}

/* ---- the factorisations (the kernel library's clk_factor) ---- */

/* Random entries in [-3, 3), reproducibly. */
static void fill_factor_values(double *values, int64_t n, unsigned seed) {
    for (int64_t i = 0; i < n; i++) {
        seed = seed * 1103515245u + 12345u;
        values[i] = (double)(seed >> 8 & 0xffff) / 65536.0 * 6 - 3;
    }
}

/* op on the device and on the CPU from the same values (a transposed, so
 * strided, when `transpose`): the same packed result to rounding, and no
 * primitive placed on another device. */
static void check_factor(porta_device *device, porta_factor_op op, int flags, porta_dtype dtype,
                         int rank, const int64_t *sizes, const double *a_values, bool transpose,
                         int b_rank, const int64_t *b_sizes, const double *b_values) {
    pair a = values_pair(device, dtype, rank, sizes, a_values), b = {NULL, NULL};
    if (transpose) {
        pair view = transposed(&a);
        pair_release(&a);
        a = view;
    }
    if (b_values) b = values_pair(device, dtype, b_rank, b_sizes, b_values);
    porta_tensor *want = NULL, *got = NULL;
    char what[96];
    snprintf(what, sizeof what, "%s %s flags %d on OpenCL", porta_factor_op_name(op),
             porta_dtype_name(dtype), flags);
    porta_placement_counts_reset();
    if (a.cpu && a.cl) {
        CHECK_OK(porta_factor(op, flags, a.cpu, b.cpu, &want));
        CHECK_OK(porta_factor(op, flags, a.cl, b.cl, &got));
    }
    CHECK_OK(porta_flush());
    nothing_placed(what);
    if (want && got) {
        CHECK(porta_tensor_device(got) == device);
        double tol = dtype == PORTA_F64 ? 1e-11 : 1e-5;
        same(what, got, want, tol, tol);
    }
    porta_tensor_release(want);
    porta_tensor_release(got);
    pair_release(&a);
    pair_release(&b);
}

#define SHAPE(...) ((const int64_t[]){__VA_ARGS__})

/* Every porta_factor_op, float32 and float64, on batched, strided and
 * broadcast operands and on failing matrices (not positive-definite,
 * singular, rank-deficient), run on the device itself and equal to the
 * CPU device's results to rounding: the kernels make the CPU's algorithm
 * choices in the same order. */
OPENCL_TEST(test_factor_opencl_every_op_matches_the_cpu_on_the_device) {
    double a[3 * 6 * 6], b[3 * 6 * 2], spd[3 * 4 * 4];
    fill_factor_values(a, 3 * 6 * 6, 7);
    fill_factor_values(b, 3 * 6 * 2, 11);
    /* two positive-definite matrices (A A^T + 4 I) and a third that fails
     * at its second column */
    for (int item = 0; item < 2; item++)
        for (int i = 0; i < 4; i++)
            for (int j = 0; j < 4; j++) {
                double s = i == j ? 4 : 0;
                for (int c = 0; c < 4; c++) s += a[item * 16 + i * 4 + c] * a[item * 16 + j * 4 + c];
                spd[item * 16 + i * 4 + j] = s;
            }
    static const double failing[16] = {1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    memcpy(spd + 32, failing, sizeof failing);
    /* rank-deficient: the third column the sum of the first two */
    double deficient[5 * 3];
    for (int i = 0; i < 5; i++) {
        deficient[i * 3] = a[i];
        deficient[i * 3 + 1] = a[10 + i];
        deficient[i * 3 + 2] = a[i] + a[10 + i];
    }
    static const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    for (int t = 0; t < 2; t++) {
        porta_dtype dtype = dtypes[t];
        if (dtype == PORTA_F64 && !float64_native(device)) continue;
        check_factor(device, PORTA_FACTOR_CHOLESKY, 0, dtype, 3, SHAPE(3, 4, 4), spd, false, 0,
                     NULL, NULL);
        check_factor(device, PORTA_FACTOR_LU, 0, dtype, 3, SHAPE(3, 5, 4), a, true, 0, NULL, NULL);
        check_factor(device, PORTA_FACTOR_LU, 0, dtype, 2, SHAPE(3, 5), a, false, 0, NULL, NULL);
        check_factor(device, PORTA_FACTOR_QR, 0, dtype, 3, SHAPE(2, 5, 3), a, false, 0, NULL, NULL);
        check_factor(device, PORTA_FACTOR_QR, 0, dtype, 2, SHAPE(3, 5), a, true, 0, NULL, NULL);
        check_factor(device, PORTA_FACTOR_EIGH, 0, dtype, 3, SHAPE(2, 5, 5), a, false, 0, NULL,
                     NULL);
        check_factor(device, PORTA_FACTOR_SVD, 0, dtype, 3, SHAPE(2, 4, 6), a, true, 0, NULL, NULL);
        check_factor(device, PORTA_FACTOR_SVD, 0, dtype, 2, SHAPE(5, 3), deficient, false, 0, NULL,
                     NULL);
        check_factor(device, PORTA_FACTOR_LDL, 0, dtype, 3, SHAPE(2, 6, 6), a, false, 0, NULL,
                     NULL);
        for (int flags = 0; flags < 4; flags++) /* one coefficient for a batch of 3 */
            check_factor(device, PORTA_FACTOR_TRIANGULAR_SOLVE, flags, dtype, 2, SHAPE(6, 6), spd,
                         flags & 1, 3, SHAPE(3, 6, 2), b);
        /* the solve reads LDL's packing: LD, then the pivots in row n */
        double ld[2 * 7 * 6];
        porta_tensor *x = NULL, *packed = NULL;
        CHECK_OK(porta_tensor_from_host(test_cpu(), PORTA_F64, 3, SHAPE(2, 6, 6), a, &x));
        CHECK_OK(porta_factor(PORTA_FACTOR_LDL, 0, x, NULL, &packed));
        CHECK_OK(porta_tensor_to_host(packed, ld, sizeof ld));
        check_factor(device, PORTA_FACTOR_LDL_SOLVE, 0, dtype, 3, SHAPE(2, 7, 6), ld, false, 3,
                     SHAPE(2, 6, 2), b);
        porta_tensor_release(packed);
        porta_tensor_release(x);
    }
    porta_placement_counts_reset();
}

/* One Fourier transform on both devices: the device's direct sums equal
 * the CPU's plans to rounding (relative to the values' size). */
static void check_fft(porta_device *device, test_rng *rng, porta_dtype dtype, int rank,
                      const int64_t *sizes, bool transpose, const porta_fft_params *params) {
    pair x = random_pair(device, rng, dtype, rank, sizes, -1, 1);
    if (transpose) {
        pair view = transposed(&x);
        pair_release(&x);
        x = view;
    }
    porta_tensor *want = NULL, *got = NULL;
    char what[96];
    snprintf(what, sizeof what, "fft kind %d %s on OpenCL", params->kind, porta_dtype_name(dtype));
    porta_placement_counts_reset();
    if (x.cpu && x.cl) {
        CHECK_OK(porta_fft(x.cpu, params, &want));
        CHECK_OK(porta_fft(x.cl, params, &got));
    }
    CHECK_OK(porta_flush());
    nothing_placed(what);
    if (want && got) {
        CHECK(porta_tensor_device(got) == device);
        double tol = dtype == PORTA_F64 ? 1e-10 : 1e-4;
        same(what, got, want, tol, tol);
    }
    porta_tensor_release(want);
    porta_tensor_release(got);
    pair_release(&x);
}

/* C2C of a prime length and over two axes, R2C of a transposed view and
 * C2R, each normalization, on the device itself. */
OPENCL_TEST(test_fft_opencl_matches_the_cpu_on_the_device) {
    test_rng rng = test_rng_make(19);
    static const porta_dtype dtypes[] = {PORTA_F32, PORTA_F64};
    for (int t = 0; t < 2; t++) {
        porta_dtype dtype = dtypes[t];
        if (dtype == PORTA_F64 && !float64_native(device)) continue;
        porta_fft_params p = {.kind = PORTA_FFT_C2C, .axis_count = 1, .axes = {1}};
        check_fft(device, &rng, dtype, 3, SHAPE(3, 97, 2), false, &p);
        p = (porta_fft_params){.kind = PORTA_FFT_C2C, .inverse = true, .norm = PORTA_FFT_NORM_BY_N,
                               .axis_count = 2, .axes = {1, 0}};
        check_fft(device, &rng, dtype, 3, SHAPE(6, 5, 2), false, &p);
        p = (porta_fft_params){.kind = PORTA_FFT_R2C, .norm = PORTA_FFT_NORM_BY_ROOT_N,
                               .axis_count = 2, .axes = {0, 1}};
        check_fft(device, &rng, dtype, 2, SHAPE(10, 7), true, &p);
        p = (porta_fft_params){.kind = PORTA_FFT_C2R, .axis_count = 2, .axes = {0, 1},
                               .last_size = 10};
        check_fft(device, &rng, dtype, 3, SHAPE(4, 6, 2), false, &p);
    }
    porta_placement_counts_reset();
}
