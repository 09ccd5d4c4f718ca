/* src/backends/pjrt/pjrt_api.h declares part of the PJRT C API by hand:
 * every struct's size and every field's offset must be those of OpenXLA's
 * pjrt_c_api.h. The official header comes with the xla-cpu-pjrt wheel
 * (installed by the set-up); the test compiles a small program against it
 * that prints the same sizes and offsets, and compares. Without the header
 * it says so on stderr (PORTA_REQUIRE_PJRT makes that a failure). */
#include <glob.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/pjrt/pjrt_api.h"
#include "test.h"

typedef struct layout_entry {
    const char *type, *field; /* field NULL: the struct's size */
    size_t value;
} layout_entry;

#define SIZE(T) {#T, NULL, sizeof(T)},
#define AT(T, f) {#T, #f, offsetof(T, f)},
#define ARGS_HEAD(T) SIZE(T) AT(T, struct_size) AT(T, extension_start)
#define API_USED(name) AT(PJRT_Api, name)
#define API_SLOT(name) AT(PJRT_Api, name)

static const layout_entry layouts[] = {
    ARGS_HEAD(PJRT_Api_Version) AT(PJRT_Api_Version, major_version)
    AT(PJRT_Api_Version, minor_version)
    ARGS_HEAD(PJRT_Error_Destroy_Args) AT(PJRT_Error_Destroy_Args, error)
    ARGS_HEAD(PJRT_Error_Message_Args) AT(PJRT_Error_Message_Args, error)
    AT(PJRT_Error_Message_Args, message) AT(PJRT_Error_Message_Args, message_size)
    ARGS_HEAD(PJRT_Plugin_Initialize_Args)
    ARGS_HEAD(PJRT_Event_Destroy_Args) AT(PJRT_Event_Destroy_Args, event)
    ARGS_HEAD(PJRT_Event_Await_Args) AT(PJRT_Event_Await_Args, event)
    ARGS_HEAD(PJRT_NamedValue) AT(PJRT_NamedValue, name) AT(PJRT_NamedValue, name_size)
    AT(PJRT_NamedValue, type) AT(PJRT_NamedValue, int64_value) AT(PJRT_NamedValue, value_size)
    ARGS_HEAD(PJRT_Client_Create_Args) AT(PJRT_Client_Create_Args, create_options)
    AT(PJRT_Client_Create_Args, num_options) AT(PJRT_Client_Create_Args, kv_get_callback)
    AT(PJRT_Client_Create_Args, kv_get_user_arg) AT(PJRT_Client_Create_Args, kv_put_callback)
    AT(PJRT_Client_Create_Args, kv_put_user_arg) AT(PJRT_Client_Create_Args, client)
    AT(PJRT_Client_Create_Args, kv_try_get_callback)
    AT(PJRT_Client_Create_Args, kv_try_get_user_arg)
    ARGS_HEAD(PJRT_Client_PlatformName_Args) AT(PJRT_Client_PlatformName_Args, client)
    AT(PJRT_Client_PlatformName_Args, platform_name)
    AT(PJRT_Client_PlatformName_Args, platform_name_size)
    ARGS_HEAD(PJRT_Client_PlatformVersion_Args) AT(PJRT_Client_PlatformVersion_Args, client)
    AT(PJRT_Client_PlatformVersion_Args, platform_version)
    AT(PJRT_Client_PlatformVersion_Args, platform_version_size)
    ARGS_HEAD(PJRT_Client_AddressableDevices_Args)
    AT(PJRT_Client_AddressableDevices_Args, client)
    AT(PJRT_Client_AddressableDevices_Args, addressable_devices)
    AT(PJRT_Client_AddressableDevices_Args, num_addressable_devices)
    ARGS_HEAD(PJRT_Program) AT(PJRT_Program, code) AT(PJRT_Program, code_size)
    AT(PJRT_Program, format) AT(PJRT_Program, format_size)
    ARGS_HEAD(PJRT_Client_Compile_Args) AT(PJRT_Client_Compile_Args, client)
    AT(PJRT_Client_Compile_Args, program) AT(PJRT_Client_Compile_Args, compile_options)
    AT(PJRT_Client_Compile_Args, compile_options_size) AT(PJRT_Client_Compile_Args, executable)
    ARGS_HEAD(PJRT_Client_BufferFromHostBuffer_Args)
    AT(PJRT_Client_BufferFromHostBuffer_Args, client)
    AT(PJRT_Client_BufferFromHostBuffer_Args, data)
    AT(PJRT_Client_BufferFromHostBuffer_Args, type)
    AT(PJRT_Client_BufferFromHostBuffer_Args, dims)
    AT(PJRT_Client_BufferFromHostBuffer_Args, num_dims)
    AT(PJRT_Client_BufferFromHostBuffer_Args, byte_strides)
    AT(PJRT_Client_BufferFromHostBuffer_Args, num_byte_strides)
    AT(PJRT_Client_BufferFromHostBuffer_Args, host_buffer_semantics)
    AT(PJRT_Client_BufferFromHostBuffer_Args, device)
    AT(PJRT_Client_BufferFromHostBuffer_Args, memory)
    AT(PJRT_Client_BufferFromHostBuffer_Args, device_layout)
    AT(PJRT_Client_BufferFromHostBuffer_Args, done_with_host_buffer)
    AT(PJRT_Client_BufferFromHostBuffer_Args, buffer)
    ARGS_HEAD(PJRT_DeviceDescription_Kind_Args)
    AT(PJRT_DeviceDescription_Kind_Args, device_description)
    AT(PJRT_DeviceDescription_Kind_Args, device_kind)
    AT(PJRT_DeviceDescription_Kind_Args, device_kind_size)
    ARGS_HEAD(PJRT_Device_GetDescription_Args) AT(PJRT_Device_GetDescription_Args, device)
    AT(PJRT_Device_GetDescription_Args, device_description)
    ARGS_HEAD(PJRT_Device_MemoryStats_Args) AT(PJRT_Device_MemoryStats_Args, device)
    AT(PJRT_Device_MemoryStats_Args, bytes_in_use)
    AT(PJRT_Device_MemoryStats_Args, bytes_limit)
    AT(PJRT_Device_MemoryStats_Args, bytes_limit_is_set)
    AT(PJRT_Device_MemoryStats_Args, peak_pool_bytes_is_set)
    ARGS_HEAD(PJRT_LoadedExecutable_GetExecutable_Args)
    AT(PJRT_LoadedExecutable_GetExecutable_Args, loaded_executable)
    AT(PJRT_LoadedExecutable_GetExecutable_Args, executable)
    ARGS_HEAD(PJRT_Executable_NumOutputs_Args) AT(PJRT_Executable_NumOutputs_Args, executable)
    AT(PJRT_Executable_NumOutputs_Args, num_outputs)
    ARGS_HEAD(PJRT_Executable_Destroy_Args) AT(PJRT_Executable_Destroy_Args, executable)
    ARGS_HEAD(PJRT_Executable_Serialize_Args) AT(PJRT_Executable_Serialize_Args, executable)
    AT(PJRT_Executable_Serialize_Args, serialized_bytes)
    AT(PJRT_Executable_Serialize_Args, serialized_bytes_size)
    AT(PJRT_Executable_Serialize_Args, serialized_executable)
    AT(PJRT_Executable_Serialize_Args, serialized_executable_deleter)
    ARGS_HEAD(PJRT_Executable_DeserializeAndLoad_Args)
    AT(PJRT_Executable_DeserializeAndLoad_Args, client)
    AT(PJRT_Executable_DeserializeAndLoad_Args, serialized_executable)
    AT(PJRT_Executable_DeserializeAndLoad_Args, serialized_executable_size)
    AT(PJRT_Executable_DeserializeAndLoad_Args, loaded_executable)
    AT(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options)
    AT(PJRT_Executable_DeserializeAndLoad_Args, overridden_serialized_compile_options_size)
    ARGS_HEAD(PJRT_LoadedExecutable_Destroy_Args)
    AT(PJRT_LoadedExecutable_Destroy_Args, executable)
    ARGS_HEAD(PJRT_ExecuteOptions) AT(PJRT_ExecuteOptions, send_callbacks)
    AT(PJRT_ExecuteOptions, recv_callbacks) AT(PJRT_ExecuteOptions, num_send_ops)
    AT(PJRT_ExecuteOptions, num_recv_ops) AT(PJRT_ExecuteOptions, launch_id)
    AT(PJRT_ExecuteOptions, non_donatable_input_indices)
    AT(PJRT_ExecuteOptions, num_non_donatable_input_indices) AT(PJRT_ExecuteOptions, context)
    AT(PJRT_ExecuteOptions, call_location) AT(PJRT_ExecuteOptions, num_tasks)
    AT(PJRT_ExecuteOptions, task_ids) AT(PJRT_ExecuteOptions, incarnation_ids)
    ARGS_HEAD(PJRT_LoadedExecutable_Execute_Args)
    AT(PJRT_LoadedExecutable_Execute_Args, executable)
    AT(PJRT_LoadedExecutable_Execute_Args, options)
    AT(PJRT_LoadedExecutable_Execute_Args, argument_lists)
    AT(PJRT_LoadedExecutable_Execute_Args, num_devices)
    AT(PJRT_LoadedExecutable_Execute_Args, num_args)
    AT(PJRT_LoadedExecutable_Execute_Args, output_lists)
    AT(PJRT_LoadedExecutable_Execute_Args, device_complete_events)
    AT(PJRT_LoadedExecutable_Execute_Args, execute_device)
    ARGS_HEAD(PJRT_Buffer_Destroy_Args) AT(PJRT_Buffer_Destroy_Args, buffer)
    ARGS_HEAD(PJRT_Buffer_ToHostBuffer_Args) AT(PJRT_Buffer_ToHostBuffer_Args, src)
    AT(PJRT_Buffer_ToHostBuffer_Args, host_layout) AT(PJRT_Buffer_ToHostBuffer_Args, dst)
    AT(PJRT_Buffer_ToHostBuffer_Args, dst_size) AT(PJRT_Buffer_ToHostBuffer_Args, event)
    ARGS_HEAD(PJRT_Buffer_CopyRawToHost_Args) AT(PJRT_Buffer_CopyRawToHost_Args, buffer)
    AT(PJRT_Buffer_CopyRawToHost_Args, dst) AT(PJRT_Buffer_CopyRawToHost_Args, offset)
    AT(PJRT_Buffer_CopyRawToHost_Args, transfer_size) AT(PJRT_Buffer_CopyRawToHost_Args, event)
    AT(PJRT_Api, struct_size) AT(PJRT_Api, extension_start) AT(PJRT_Api, pjrt_api_version)
    PJRT_API_ENTRIES(API_USED, API_SLOT)
};

/* The enum values Porta passes, checked the same way. */
static const struct {
    const char *name;
    long value;
} enum_values[] = {
    {"PJRT_Buffer_Type_U8", PJRT_Buffer_Type_U8},
    {"PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes",
     PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes},
    {"PJRT_NamedValue_kInt64", PJRT_NamedValue_kInt64},
    {"PJRT_API_MAJOR", PJRT_API_VERSION_MAJOR},
    {"PJRT_API_MINOR", PJRT_API_VERSION_MINOR},
};

#define COUNT(a) (sizeof a / sizeof a[0])

/* pjrt_c_api.h from an installed xla-cpu-pjrt: PORTA_PJRT_API_HEADER, else
 * the active virtual environment's, else the .venv beside the build folder. */
static bool find_header(char *out, size_t cap) {
    const char *chosen = getenv("PORTA_PJRT_API_HEADER");
    if (chosen && *chosen) {
        snprintf(out, cap, "%s", chosen);
        return access(out, R_OK) == 0;
    }
    char build[2048], prefixes[2][sizeof build + 16];
    snprintf(build, sizeof build, "%s", PORTA_CLI_PATH);
    const char *venv = getenv("VIRTUAL_ENV");
    snprintf(prefixes[0], sizeof prefixes[0], "%s", venv && *venv ? venv : "/nonexistent");
    snprintf(prefixes[1], sizeof prefixes[1], "%s/../.venv", dirname(build));
    for (int i = 0; i < 2; i++) {
        char pattern[sizeof prefixes[0] + 96];
        int length = snprintf(pattern, sizeof pattern,
                              "%s/lib/python3*/site-packages/xla_plugins/*/include/pjrt_c_api.h",
                              prefixes[i]);
        if (length < 0 || (size_t)length >= sizeof pattern) continue;
        glob_t matches;
        bool found = glob(pattern, 0, NULL, &matches) == 0 && matches.gl_pathc > 0;
        if (found) snprintf(out, cap, "%s", matches.gl_pathv[0]);
        globfree(&matches);
        if (found) return true;
    }
    return false;
}

/* Writes a C program printing, one per line, the official layout of every
 * entry and every enum value. */
static bool write_probe(const char *path, const char *header) {
    FILE *f = fopen(path, "w");
    if (!f) return false;
    fprintf(f, "#include <stddef.h>\n#include <stdio.h>\n#include \"%s\"\nint main(void) {\n",
            header);
    for (size_t i = 0; i < COUNT(layouts); i++) {
        if (layouts[i].field)
            fprintf(f, "printf(\"%%zu\\n\", offsetof(%s, %s));\n", layouts[i].type,
                    layouts[i].field);
        else
            fprintf(f, "printf(\"%%zu\\n\", sizeof(%s));\n", layouts[i].type);
    }
    for (size_t i = 0; i < COUNT(enum_values); i++)
        fprintf(f, "printf(\"%%ld\\n\", (long)%s);\n", enum_values[i].name);
    fprintf(f, "return 0;\n}\n");
    return fclose(f) == 0;
}

TEST(test_pjrt_api_layouts_match_the_official_header) {
    char header[4096];
    if (!find_header(header, sizeof header)) {
        if (getenv("PORTA_REQUIRE_PJRT"))
            test_fail(__FILE__, __LINE__, "PORTA_REQUIRE_PJRT is set but no pjrt_c_api.h");
        else
            fprintf(stderr, "%s: NOT RUN, no pjrt_c_api.h found (pip install --no-deps "
                            "xla-cpu-pjrt in the virtual environment, or set "
                            "PORTA_PJRT_API_HEADER)\n", __func__);
        return;
    }
    char dir[] = "/tmp/porta_pjrt_api_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char source[256], program[256], line[9000], output[1 << 16];
    snprintf(source, sizeof source, "%s/probe.c", dir);
    snprintf(program, sizeof program, "%s/probe", dir);
    CHECK(write_probe(source, header));
    const char *cc = getenv("CC");
    snprintf(line, sizeof line, "%s -std=c11 -o %s %s && %s", cc && *cc ? cc : "cc", program,
             source, program);
    int code = test_run_command(line, output, sizeof output);
    CHECK_MSG(code == 0, "the layout probe against %s failed:\n%s", header, output);
    if (code == 0) {
        char *save = NULL, *value = strtok_r(output, "\n", &save);
        for (size_t i = 0; i < COUNT(layouts); i++, value = strtok_r(NULL, "\n", &save)) {
            size_t official = value ? strtoull(value, NULL, 10) : (size_t)-1;
            CHECK_MSG(official == layouts[i].value, "%s%s%s: Porta's %s is %zu, %s says %zu",
                      layouts[i].type, layouts[i].field ? "." : "",
                      layouts[i].field ? layouts[i].field : "",
                      layouts[i].field ? "offset" : "size", layouts[i].value, header, official);
        }
        for (size_t i = 0; i < COUNT(enum_values); i++, value = strtok_r(NULL, "\n", &save)) {
            long official = value ? strtol(value, NULL, 10) : -1;
            CHECK_MSG(official == enum_values[i].value, "%s: Porta's is %ld, %s says %ld",
                      enum_values[i].name, enum_values[i].value, header, official);
        }
    }
    unlink(source);
    unlink(program);
    rmdir(dir);
}
