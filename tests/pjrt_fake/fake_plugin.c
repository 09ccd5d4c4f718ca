/* A stand-in PJRT plugin that fails the way real ones do without their
 * hardware, built once per FAKE_* mode (CMakeLists.txt) for
 * tests/test_pjrt_plugins.c:
 *   FAKE_WRONG_MAJOR  reports PJRT API version 1.0;
 *   FAKE_CREATE_FAILS Client_Create refuses the CPU plugin's option as
 *                     libtpu does, and without it returns an error with a
 *                     message;
 *   FAKE_INIT_HANGS   Plugin_Initialize sleeps a minute (as libtpu does
 *                     querying a metadata server);
 *   FAKE_TPU_ENV      initialize fails, its message giving the value of
 *                     TPU_SKIP_MDS_QUERY (the file is named like libtpu). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/pjrt/pjrt_api.h"

struct PJRT_Error {
    char message[256];
};

static PJRT_Error *fail(const char *message) {
    PJRT_Error *error = calloc(1, sizeof *error);
    if (error) snprintf(error->message, sizeof error->message, "%s", message);
    return error;
}

static void error_destroy(PJRT_Error_Destroy_Args *args) {
    free(args->error);
}

static void error_message(PJRT_Error_Message_Args *args) {
    args->message = args->error->message;
    args->message_size = strlen(args->error->message);
}

static PJRT_Error *initialize(PJRT_Plugin_Initialize_Args *args) {
#if defined(FAKE_INIT_HANGS)
    sleep(60);
#elif defined(FAKE_TPU_ENV)
    char message[128];
    const char *value = getenv("TPU_SKIP_MDS_QUERY");
    snprintf(message, sizeof message, "TPU_SKIP_MDS_QUERY=%s", value ? value : "(unset)");
    return fail(message);
#endif
    return NULL;
}

static PJRT_Error *client_create(PJRT_Client_Create_Args *args) {
    if (args->num_options)
        return fail("Unexpected option name passed to PJRT_Client_Create: cpu_device_count");
    return fail("fake plugin: no device of this kind is attached");
}

static PJRT_Api api = {
    .struct_size = sizeof(PJRT_Api),
    .pjrt_api_version = {.struct_size = sizeof(PJRT_Api_Version),
#ifdef FAKE_WRONG_MAJOR
                         .major_version = 1,
                         .minor_version = 0},
#else
                         .major_version = PJRT_API_VERSION_MAJOR,
                         .minor_version = PJRT_API_VERSION_MINOR},
#endif
    .PJRT_Error_Destroy = error_destroy,
    .PJRT_Error_Message = error_message,
    .PJRT_Plugin_Initialize = initialize,
    .PJRT_Client_Create = client_create,
};

__attribute__((visibility("default"))) const PJRT_Api *GetPjrtApi(void) {
    return &api;
}
