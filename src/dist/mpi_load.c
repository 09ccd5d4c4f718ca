/* Loads Open MPI at run time: the library, its functions and its predefined
 * handles, into one table. Nothing here is needed to build Porta. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "dist/mpi_load.h"

/* Open MPI's ABI (the only one this table describes) is libmpi.so.40. */
static const char *const default_libraries[] = {"libmpi.so.40", "libmpi.so"};

static pthread_mutex_t load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static mpi_api api;

typedef struct symbol_slot {
    const char *name;
    void **slot;
    bool is_object; /* a predefined handle: the handle is the symbol's address */
} symbol_slot;

#define FN(field) {"MPI_" #field, (void **)&table->field, false}
#define OBJ(symbol, field) {symbol, (void **)&table->field, true}

static porta_status *resolve(void *library, const char *library_name, mpi_api *table) {
    const symbol_slot slots[] = {
        FN(Initialized), FN(Finalized), FN(Init_thread), FN(Query_thread), FN(Finalize),
        FN(Comm_rank), FN(Comm_size), FN(Comm_idup), FN(Comm_free), FN(Comm_group),
        FN(Group_incl), FN(Group_free), FN(Comm_create_group), FN(Comm_set_errhandler),
        FN(Error_string), FN(Iallreduce), FN(Iallgather), FN(Ireduce_scatter_block),
        FN(Ialltoallv), FN(Ibcast), FN(Ibarrier), FN(Isend), FN(Irecv), FN(Test),
        FN(Iprobe), FN(Recv), FN(Send), FN(Get_count),
        OBJ("ompi_mpi_comm_world", comm_world), OBJ("ompi_mpi_errors_return", errors_return),
        OBJ("ompi_mpi_byte", byte), OBJ("ompi_mpi_c_bool", c_bool),
        OBJ("ompi_mpi_uint8_t", u8), OBJ("ompi_mpi_int8_t", i8),
        OBJ("ompi_mpi_int16_t", i16), OBJ("ompi_mpi_int32_t", i32),
        OBJ("ompi_mpi_int64_t", i64), OBJ("ompi_mpi_float", f32),
        OBJ("ompi_mpi_double", f64), OBJ("ompi_mpi_op_sum", sum), OBJ("ompi_mpi_op_max", max),
        OBJ("ompi_mpi_op_min", min), OBJ("ompi_mpi_op_lor", lor),
        OBJ("ompi_mpi_op_land", land),
    };
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        void *address = dlsym(library, slots[i].name);
        if (!address)
            return porta_error(PORTA_ERR_UNAVAILABLE,
                               "MPI library %s lacks %s (Porta needs Open MPI's ABI, "
                               "libmpi.so.40)",
                               library_name, slots[i].name);
        *slots[i].slot = address;
    }
    return NULL;
}

porta_status *mpi_api_load_from(const char *library_name, mpi_api *out) {
    if (!library_name || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT, "mpi_api_load_from: NULL argument");
    /* GLOBAL: Open MPI's own plugins, loaded later, look up libmpi's symbols. */
    void *library = dlopen(library_name, RTLD_NOW | RTLD_GLOBAL);
    if (!library) {
        const char *reason = dlerror();
        return porta_error(PORTA_ERR_UNAVAILABLE, "MPI is not available: cannot load %s (%s)",
                           library_name, reason ? reason : "unknown reason");
    }
    mpi_api table;
    memset(&table, 0, sizeof table);
    porta_status *status = resolve(library, library_name, &table);
    if (status) {
        dlclose(library);
        return status;
    }
    *out = table; /* the library stays loaded for the process */
    return NULL;
}

static porta_status *load_any(mpi_api *out) {
    const char *chosen = getenv("PORTA_MPI_LIBRARY");
    if (chosen && *chosen)
        return mpi_api_load_from(chosen, out);
    porta_status *first = NULL;
    for (size_t i = 0; i < sizeof default_libraries / sizeof default_libraries[0]; i++) {
        porta_status *status = mpi_api_load_from(default_libraries[i], out);
        if (!status) {
            porta_status_free(first);
            return NULL;
        }
        if (first)
            porta_status_free(status);
        else
            first = status;
    }
    return porta_error_context(first, "install Open MPI (libopenmpi-dev, openmpi-bin) or "
                                      "set PORTA_MPI_LIBRARY");
}

porta_status *mpi_api_get(const mpi_api **out) {
    pthread_mutex_lock(&load_lock);
    porta_status *status = NULL;
    if (!loaded) {
        status = load_any(&api);
        loaded = status == NULL;
    }
    pthread_mutex_unlock(&load_lock);
    if (status)
        return status;
    *out = &api;
    return NULL;
}
