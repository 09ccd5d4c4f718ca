/* porta_dist without an MPI world: loading failures, calls before init,
 * argument errors and staging under a memory limit. The collectives
 * themselves run across processes in python/tests/test_distributed.py. */
#include <stdlib.h>
#include <string.h>

#include "dist/mpi_load.h"
#include "porta_dist.h"
#include "test.h"

TEST(test_dist_loader_names_what_is_missing) {
    mpi_api table;
    CHECK_ERR(mpi_api_load_from("/nonexistent/libmpi-missing.so.40", &table),
              PORTA_ERR_UNAVAILABLE, "libmpi-missing.so.40");
    /* A library that loads but is not Open MPI. */
    CHECK_ERR(mpi_api_load_from("libm.so.6", &table), PORTA_ERR_UNAVAILABLE,
              "lacks MPI_Initialized");
    CHECK_ERR(mpi_api_load_from(NULL, &table), PORTA_ERR_INVALID_ARGUMENT, NULL);
}

TEST(test_dist_unavailable_without_mpi) {
    setenv("PORTA_MPI_LIBRARY", "/nonexistent/libmpi-missing.so.40", 1);
    CHECK(!porta_dist_available());
    CHECK_ERR(porta_dist_init(), PORTA_ERR_UNAVAILABLE, "MPI is not available");
    unsetenv("PORTA_MPI_LIBRARY");
    CHECK(!porta_dist_is_initialized());
    CHECK(porta_dist_rank() == -1 && porta_dist_size() == -1);
    CHECK_OK(porta_dist_finalize()); /* nothing joined: nothing to do */
}

TEST(test_dist_bad_timeout_environment_is_rejected_at_init) {
    setenv("PORTA_DIST_TIMEOUT", "soon", 1);
    CHECK_ERR(porta_dist_init(), PORTA_ERR_INVALID_ARGUMENT, "PORTA_DIST_TIMEOUT");
    setenv("PORTA_DIST_TIMEOUT", "-3", 1);
    CHECK_ERR(porta_dist_init(), PORTA_ERR_INVALID_ARGUMENT, "given \"-3\"");
    unsetenv("PORTA_DIST_TIMEOUT");
    CHECK(!porta_dist_is_initialized());
}

TEST(test_dist_timeout_setting) {
    double previous = porta_dist_get_timeout();
    CHECK(previous > 0);
    CHECK_ERR(porta_dist_set_timeout(0), PORTA_ERR_INVALID_ARGUMENT, "given 0");
    CHECK_ERR(porta_dist_set_timeout(-1), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_dist_set_timeout(NAN), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_OK(porta_dist_set_timeout(2.5));
    CHECK(porta_dist_get_timeout() == 2.5);
    CHECK_OK(porta_dist_set_timeout(previous));
    CHECK(porta_dist_get_timeout() == previous);
}

TEST(test_dist_calls_before_init_say_so) {
    int64_t sizes[1] = {6};
    porta_tensor *t = test_empty(PORTA_F32, 1, sizes);
    porta_tensor *big = test_empty(PORTA_F32, 1, (int64_t[]){12});
    if (!t || !big) {
        porta_tensor_release(t);
        porta_tensor_release(big);
        return;
    }
    CHECK_ERR(porta_dist_all_reduce(t, PORTA_DIST_SUM), PORTA_ERR_UNAVAILABLE,
              "before porta_dist_init");
    CHECK_ERR(porta_dist_broadcast(t, 0), PORTA_ERR_UNAVAILABLE, "broadcast before");
    CHECK_ERR(porta_dist_all_gather(t, big), PORTA_ERR_UNAVAILABLE, "all_gather before");
    CHECK_ERR(porta_dist_reduce_scatter(big, t, PORTA_DIST_MAX), PORTA_ERR_UNAVAILABLE,
              "reduce_scatter before");
    CHECK_ERR(porta_dist_barrier(), PORTA_ERR_UNAVAILABLE, "barrier before");
    CHECK_ERR(porta_dist_send(t, 1, 0), PORTA_ERR_UNAVAILABLE, "send before");
    CHECK_ERR(porta_dist_recv(t, 1, 0), PORTA_ERR_UNAVAILABLE, "recv before");
    float host[6] = {0};
    CHECK_ERR(porta_dist_all_reduce_host(host, 6, PORTA_F32, PORTA_DIST_MIN),
              PORTA_ERR_UNAVAILABLE, "before porta_dist_init");
    /* Staged (strided) tensors release their staging memory on the error. */
    porta_tensor *strided = test_view_on(big, 1, sizes, (int64_t[]){2}, 0);
    if (strided) {
        CHECK_ERR(porta_dist_all_reduce(strided, PORTA_DIST_SUM), PORTA_ERR_UNAVAILABLE,
                  NULL);
        CHECK_ERR(porta_dist_recv(strided, 1, 0), PORTA_ERR_UNAVAILABLE, NULL);
        porta_tensor_release(strided);
    }
    porta_tensor_release(t);
    porta_tensor_release(big);
}

TEST(test_dist_argument_errors) {
    CHECK_ERR(porta_dist_all_reduce(NULL, PORTA_DIST_SUM), PORTA_ERR_INVALID_ARGUMENT,
              "tensor is NULL");
    CHECK_ERR(porta_dist_all_gather(NULL, NULL), PORTA_ERR_INVALID_ARGUMENT, "in is NULL");
    CHECK_ERR(porta_dist_broadcast(NULL, 0), PORTA_ERR_INVALID_ARGUMENT, NULL);
    CHECK_ERR(porta_dist_send(NULL, 0, 0), PORTA_ERR_INVALID_ARGUMENT, NULL);
    int64_t ints[3] = {1, 2, 3};
    CHECK_ERR(porta_dist_all_reduce_host(ints, 3, PORTA_I64, PORTA_DIST_AVG), PORTA_ERR_DTYPE,
              "avg needs a floating dtype, given int64");
    CHECK_ERR(porta_dist_all_reduce_host(ints, 3, PORTA_I64, (porta_dist_op)9),
              PORTA_ERR_INVALID_ARGUMENT, "given 9");
    CHECK_ERR(porta_dist_all_reduce_host(ints, -1, PORTA_I64, PORTA_DIST_SUM),
              PORTA_ERR_OUT_OF_RANGE, "given -1");
    CHECK_ERR(porta_dist_all_reduce_host(NULL, 3, PORTA_I64, PORTA_DIST_SUM),
              PORTA_ERR_INVALID_ARGUMENT, "data is NULL");
    CHECK_ERR(porta_dist_broadcast_host(ints, 3, (porta_dtype)77, 0),
              PORTA_ERR_INVALID_ARGUMENT, "invalid dtype 77");
    CHECK_ERR(porta_dist_all_gather_host(ints, NULL, 3, PORTA_I64), PORTA_ERR_INVALID_ARGUMENT,
              "out is NULL");
    CHECK_ERR(porta_dist_reduce_scatter_host(NULL, ints, 3, PORTA_I64, PORTA_DIST_SUM),
              PORTA_ERR_INVALID_ARGUMENT, "in is NULL");
}

TEST(test_dist_staging_under_memory_limit) {
    int64_t sizes[2] = {64, 64};
    porta_tensor *t = test_empty(PORTA_F32, 2, sizes);
    if (!t)
        return;
    porta_tensor *column = NULL;
    porta_status *status = porta_slice(t, 1, 0, 1, 1, &column);
    CHECK(!status);
    porta_status_free(status);
    if (column) {
        uint64_t previous = porta_set_memory_limit(porta_memory_allocated() + 16);
        /* 64 strided floats need 256 bytes of staging: over the limit. */
        CHECK_ERR(porta_dist_all_reduce(column, PORTA_DIST_SUM), PORTA_ERR_OUT_OF_MEMORY,
                  "porta_dist staging");
        porta_set_memory_limit(previous);
        porta_tensor_release(column);
    }
    porta_tensor_release(t);
}

TEST(test_dist_asynchronous_calls_before_init_say_so) {
    int64_t sizes[1] = {6};
    porta_tensor *t = test_empty(PORTA_F32, 1, sizes);
    porta_tensor *big = test_empty(PORTA_F32, 1, (int64_t[]){12});
    if (!t || !big) {
        porta_tensor_release(t);
        porta_tensor_release(big);
        return;
    }
    porta_dist_work *work = NULL;
    CHECK_ERR(porta_dist_all_reduce_start(NULL, t, PORTA_DIST_SUM, &work), PORTA_ERR_UNAVAILABLE,
              "all_reduce before porta_dist_init");
    CHECK(work == NULL);
    CHECK_ERR(porta_dist_all_reduce_start(NULL, t, PORTA_DIST_SUM, NULL),
              PORTA_ERR_INVALID_ARGUMENT, "work is NULL");
    CHECK_ERR(porta_dist_all_gather_start(NULL, t, big, &work), PORTA_ERR_UNAVAILABLE,
              "all_gather before");
    CHECK_ERR(porta_dist_reduce_scatter_start(NULL, big, t, PORTA_DIST_SUM, &work),
              PORTA_ERR_UNAVAILABLE, "reduce_scatter before");
    CHECK_ERR(porta_dist_all_to_all_start(NULL, t, NULL, t, NULL, &work), PORTA_ERR_UNAVAILABLE,
              "all_to_all before");
    CHECK_ERR(porta_dist_all_to_all(t, NULL, t, NULL), PORTA_ERR_UNAVAILABLE, "all_to_all before");
    CHECK_ERR(porta_dist_broadcast_start(NULL, t, 0, &work), PORTA_ERR_UNAVAILABLE,
              "broadcast before");
    CHECK_ERR(porta_dist_barrier_start(NULL, &work), PORTA_ERR_UNAVAILABLE, "barrier before");
    CHECK_ERR(porta_dist_send_start(NULL, t, 1, 0, &work), PORTA_ERR_UNAVAILABLE, "send before");
    CHECK_ERR(porta_dist_recv_start(NULL, t, 1, 0, &work), PORTA_ERR_UNAVAILABLE, "recv before");
    float host[6] = {0};
    CHECK_ERR(porta_dist_all_reduce_host_start(NULL, host, 6, PORTA_F32, PORTA_DIST_SUM, &work),
              PORTA_ERR_UNAVAILABLE, "before porta_dist_init");
    int64_t counts[2] = {3, 3};
    CHECK_ERR(porta_dist_all_to_all_host(host, counts, host, counts, PORTA_F32),
              PORTA_ERR_UNAVAILABLE, "all_to_all before");
    CHECK(work == NULL);
    /* Staged tensors (strided) release their staging memory and the tensor
     * on the refusal; the runner's leak check sees it. */
    porta_tensor *strided = test_view_on(big, 1, sizes, (int64_t[]){2}, 0);
    if (strided) {
        CHECK_ERR(porta_dist_all_reduce_start(NULL, strided, PORTA_DIST_SUM, &work),
                  PORTA_ERR_UNAVAILABLE, NULL);
        porta_tensor_release(strided);
    }
    porta_tensor_release(t);
    porta_tensor_release(big);
}

TEST(test_dist_work_and_group_handles_without_a_world) {
    CHECK_ERR(porta_dist_work_wait(NULL), PORTA_ERR_INVALID_ARGUMENT, "work is NULL");
    CHECK(!porta_dist_work_is_completed(NULL));
    CHECK(!porta_dist_work_needs_wait(NULL));
    porta_dist_work_on_done(NULL, NULL, NULL);
    porta_dist_work_free(NULL);
    porta_dist_group *group = NULL;
    int ranks[2] = {0, 1};
    CHECK_ERR(porta_dist_group_new(NULL, 2, &group), PORTA_ERR_INVALID_ARGUMENT, "ranks is NULL");
    CHECK_ERR(porta_dist_group_new(ranks, 2, NULL), PORTA_ERR_INVALID_ARGUMENT, "out is NULL");
    CHECK_ERR(porta_dist_group_new(ranks, 2, &group), PORTA_ERR_UNAVAILABLE,
              "new_group before porta_dist_init");
    CHECK(group == NULL);
    CHECK(porta_dist_group_rank(NULL) == -1 && porta_dist_group_size(NULL) == -1);
    porta_dist_group_free(NULL);
}

TEST(test_dist_all_to_all_host_needs_counts) {
    float host[4] = {0};
    int64_t counts[2] = {2, 2};
    CHECK_ERR(porta_dist_all_to_all_host(host, NULL, host, counts, PORTA_F32),
              PORTA_ERR_INVALID_ARGUMENT, "send_counts and recv_counts are needed");
    CHECK_ERR(porta_dist_all_to_all_host(host, counts, host, counts, (porta_dtype)77),
              PORTA_ERR_INVALID_ARGUMENT, "invalid dtype 77");
}
