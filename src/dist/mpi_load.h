/* The part of Open MPI's ABI that porta_dist uses, declared here so that
 * building Porta never needs MPI's headers, and loaded with dlopen. In Open
 * MPI, handles (communicators, datatypes, ops, requests) are pointers to
 * library objects, and the predefined ones are global symbols
 * (ompi_mpi_float, ompi_mpi_op_sum, ...) looked up with dlsym like the
 * functions. */
#ifndef PORTA_DIST_MPI_LOAD_H
#define PORTA_DIST_MPI_LOAD_H

#include <stdbool.h>

#include "porta.h"

typedef void *mpi_comm;
typedef void *mpi_datatype;
typedef void *mpi_op;
typedef void *mpi_request;
typedef void *mpi_errhandler;
typedef void *mpi_group;
/* MPI_Status: Open MPI's starts with source, tag and error; the rest is
 * private and covered by the padding. */
typedef struct mpi_status {
    int source;
    int tag;
    int error;
    int private_words[13];
} mpi_status;

#define MPI_OK 0
#define MPI_IN_PLACE_VALUE ((void *)1)
#define MPI_STATUS_IGNORE_VALUE ((mpi_status *)0)
#define MPI_THREAD_FUNNELED_VALUE 1
#define MPI_THREAD_SERIALIZED_VALUE 2
#define MPI_THREAD_MULTIPLE_VALUE 3
#define MPI_MAX_ERROR_STRING_VALUE 256

typedef struct mpi_api {
    int (*Initialized)(int *flag);
    int (*Finalized)(int *flag);
    int (*Init_thread)(int *argc, char ***argv, int required, int *provided);
    int (*Query_thread)(int *provided);
    int (*Finalize)(void);
    int (*Comm_rank)(mpi_comm comm, int *rank);
    int (*Comm_size)(mpi_comm comm, int *size);
    int (*Comm_idup)(mpi_comm comm, mpi_comm *out, mpi_request *request);
    int (*Comm_free)(mpi_comm *comm);
    int (*Comm_group)(mpi_comm comm, mpi_group *group);
    int (*Group_incl)(mpi_group group, int count, const int *ranks, mpi_group *out);
    int (*Group_free)(mpi_group *group);
    int (*Comm_create_group)(mpi_comm comm, mpi_group group, int tag, mpi_comm *out);
    int (*Comm_set_errhandler)(mpi_comm comm, mpi_errhandler handler);
    int (*Error_string)(int code, char *text, int *length);
    int (*Iallreduce)(const void *send, void *recv, int count, mpi_datatype type, mpi_op op,
                      mpi_comm comm, mpi_request *request);
    int (*Iallgather)(const void *send, int send_count, mpi_datatype send_type, void *recv,
                      int recv_count, mpi_datatype recv_type, mpi_comm comm,
                      mpi_request *request);
    int (*Ireduce_scatter_block)(const void *send, void *recv, int count, mpi_datatype type,
                                 mpi_op op, mpi_comm comm, mpi_request *request);
    int (*Ialltoallv)(const void *send, const int *send_counts, const int *send_displs,
                      mpi_datatype send_type, void *recv, const int *recv_counts,
                      const int *recv_displs, mpi_datatype recv_type, mpi_comm comm,
                      mpi_request *request);
    int (*Ibcast)(void *data, int count, mpi_datatype type, int root, mpi_comm comm,
                  mpi_request *request);
    int (*Ibarrier)(mpi_comm comm, mpi_request *request);
    int (*Isend)(const void *data, int count, mpi_datatype type, int dst, int tag,
                 mpi_comm comm, mpi_request *request);
    int (*Irecv)(void *data, int count, mpi_datatype type, int src, int tag, mpi_comm comm,
                 mpi_request *request);
    int (*Test)(mpi_request *request, int *done, mpi_status *status);
    int (*Iprobe)(int src, int tag, mpi_comm comm, int *found, mpi_status *status);
    int (*Recv)(void *data, int count, mpi_datatype type, int src, int tag, mpi_comm comm,
                mpi_status *status);
    int (*Send)(const void *data, int count, mpi_datatype type, int dst, int tag,
                mpi_comm comm);
    int (*Get_count)(const mpi_status *status, mpi_datatype type, int *count);

    mpi_comm comm_world;
    mpi_errhandler errors_return;
    mpi_datatype byte, c_bool, u8, i8, i16, i32, i64, f32, f64;
    mpi_op sum, max, min, lor, land;
} mpi_api;

/* The loaded library, or a status saying why it is unavailable
 * (PORTA_ERR_UNAVAILABLE). A successful load is kept for the process; a
 * failed one is retried at the next call. PORTA_MPI_LIBRARY, when set, names
 * the only library tried (else libmpi.so.40, then libmpi.so). */
porta_status *mpi_api_get(const mpi_api **out);
/* Loads one library into *out (tests use it on libraries that fail). */
porta_status *mpi_api_load_from(const char *library_name, mpi_api *out);

#endif
