/* The part of the PJRT C API (OpenXLA's pjrt_c_api.h) that Porta uses,
 * declared here so that Porta builds without XLA: a plugin is a shared
 * library exporting GetPjrtApi, loaded at run time (pjrt_loader.c).
 *
 * Layout rules of the API: every argument struct begins with struct_size
 * (the caller sets it to the size it knows) and extension_start; a plugin
 * of a newer minor version accepts the smaller structs of an older one.
 * The layouts below are those of API version 0.PJRT_API_VERSION_MINOR;
 * tests/test_pjrt_api.c checks every size and offset against the official
 * header when one is installed. The function table's entries that Porta
 * does not call are declared as bare slots (they fix the offsets of the
 * entries after them). */
#ifndef PORTA_BACKENDS_PJRT_PJRT_API_H
#define PORTA_BACKENDS_PJRT_PJRT_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The version these declarations follow: a plugin must have this major
 * version and at least this minor one. */
#define PJRT_API_VERSION_MAJOR 0
#define PJRT_API_VERSION_MINOR 81

typedef struct PJRT_Extension_Base PJRT_Extension_Base;
typedef struct PJRT_Error PJRT_Error;
typedef struct PJRT_Event PJRT_Event;
typedef struct PJRT_Client PJRT_Client;
typedef struct PJRT_Device PJRT_Device;
typedef struct PJRT_DeviceDescription PJRT_DeviceDescription;
typedef struct PJRT_Memory PJRT_Memory;
typedef struct PJRT_Buffer PJRT_Buffer;
typedef struct PJRT_Buffer_MemoryLayout PJRT_Buffer_MemoryLayout;
typedef struct PJRT_LoadedExecutable PJRT_LoadedExecutable;
typedef struct PJRT_ExecuteContext PJRT_ExecuteContext;
typedef struct PJRT_SendCallbackInfo PJRT_SendCallbackInfo;
typedef struct PJRT_RecvCallbackInfo PJRT_RecvCallbackInfo;

/* ---- enums (only the values Porta names) ---- */

typedef enum { PJRT_Buffer_Type_U8 = 6 } PJRT_Buffer_Type;

typedef enum {
    PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes = 1,
} PJRT_HostBufferSemantics;

typedef enum { PJRT_NamedValue_kInt64 = 1 } PJRT_NamedValue_Type;

/* ---- argument structs ---- */

typedef struct PJRT_Api_Version {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    int major_version;
    int minor_version;
} PJRT_Api_Version;

typedef struct PJRT_Error_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Error *error;
} PJRT_Error_Destroy_Args;

typedef struct PJRT_Error_Message_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_Error *error;
    const char *message; /* out */
    size_t message_size; /* out */
} PJRT_Error_Message_Args;

typedef struct PJRT_Plugin_Initialize_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
} PJRT_Plugin_Initialize_Args;

/* PJRT_Event_Destroy and _Await take the same arguments. */
typedef struct PJRT_Event_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Event *event;
} PJRT_Event_Destroy_Args;
typedef PJRT_Event_Destroy_Args PJRT_Event_Await_Args;

typedef struct PJRT_NamedValue {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const char *name;
    size_t name_size;
    PJRT_NamedValue_Type type;
    /* a union of the value kinds in the API (none wider than 8 bytes);
     * Porta passes integers only */
    int64_t int64_value;
    size_t value_size; /* 1 for a scalar */
} PJRT_NamedValue;

typedef struct PJRT_Client_Create_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_NamedValue *create_options;
    size_t num_options;
    void *kv_get_callback;
    void *kv_get_user_arg;
    void *kv_put_callback;
    void *kv_put_user_arg;
    PJRT_Client *client; /* out */
    void *kv_try_get_callback;
    void *kv_try_get_user_arg;
} PJRT_Client_Create_Args;

typedef struct PJRT_Client_PlatformName_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *platform_name; /* out */
    size_t platform_name_size; /* out */
} PJRT_Client_PlatformName_Args;

typedef struct PJRT_Client_PlatformVersion_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *platform_version; /* out */
    size_t platform_version_size; /* out */
} PJRT_Client_PlatformVersion_Args;

typedef struct PJRT_Client_AddressableDevices_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    PJRT_Device *const *addressable_devices; /* out */
    size_t num_addressable_devices;          /* out */
} PJRT_Client_AddressableDevices_Args;

typedef struct PJRT_Program {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    char *code;
    size_t code_size;
    const char *format;
    size_t format_size;
} PJRT_Program;

typedef struct PJRT_Client_Compile_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const PJRT_Program *program;
    const char *compile_options; /* a serialized CompileOptionsProto */
    size_t compile_options_size;
    PJRT_LoadedExecutable *executable; /* out */
} PJRT_Client_Compile_Args;

typedef struct PJRT_Client_BufferFromHostBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const void *data;
    PJRT_Buffer_Type type;
    const int64_t *dims;
    size_t num_dims;
    const int64_t *byte_strides;
    size_t num_byte_strides;
    PJRT_HostBufferSemantics host_buffer_semantics;
    PJRT_Device *device;
    PJRT_Memory *memory;
    PJRT_Buffer_MemoryLayout *device_layout;
    PJRT_Event *done_with_host_buffer; /* out */
    PJRT_Buffer *buffer;               /* out */
} PJRT_Client_BufferFromHostBuffer_Args;

typedef struct PJRT_DeviceDescription_Kind_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_DeviceDescription *device_description;
    const char *device_kind; /* out */
    size_t device_kind_size; /* out */
} PJRT_DeviceDescription_Kind_Args;

typedef struct PJRT_Device_GetDescription_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    PJRT_DeviceDescription *device_description; /* out */
} PJRT_Device_GetDescription_Args;

/* Porta reads bytes_limit only; the fields after it are declared so that
 * struct_size is the full size of this version's struct. */
typedef struct PJRT_Device_MemoryStats_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Device *device;
    int64_t bytes_in_use;
    int64_t peak_bytes_in_use;
    bool peak_bytes_in_use_is_set;
    int64_t num_allocs;
    bool num_allocs_is_set;
    int64_t largest_alloc_size;
    bool largest_alloc_size_is_set;
    int64_t bytes_limit;
    bool bytes_limit_is_set;
    int64_t bytes_reserved;
    bool bytes_reserved_is_set;
    int64_t peak_bytes_reserved;
    bool peak_bytes_reserved_is_set;
    int64_t bytes_reservable_limit;
    bool bytes_reservable_limit_is_set;
    int64_t largest_free_block_bytes;
    bool largest_free_block_bytes_is_set;
    int64_t pool_bytes;
    bool pool_bytes_is_set;
    int64_t peak_pool_bytes;
    bool peak_pool_bytes_is_set;
} PJRT_Device_MemoryStats_Args;

typedef struct PJRT_Executable PJRT_Executable;

typedef struct PJRT_LoadedExecutable_GetExecutable_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *loaded_executable;
    PJRT_Executable *executable; /* out: destroy it after use */
} PJRT_LoadedExecutable_GetExecutable_Args;

typedef struct PJRT_Executable_NumOutputs_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
    size_t num_outputs; /* out */
} PJRT_Executable_NumOutputs_Args;

typedef struct PJRT_Executable_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Executable *executable;
} PJRT_Executable_Destroy_Args;

typedef struct PJRT_SerializedExecutable PJRT_SerializedExecutable;

typedef struct PJRT_Executable_Serialize_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    const PJRT_Executable *executable;
    const char *serialized_bytes;                       /* out, owned by: */
    size_t serialized_bytes_size;                       /* out */
    PJRT_SerializedExecutable *serialized_executable;   /* out: free with: */
    void (*serialized_executable_deleter)(PJRT_SerializedExecutable *exec); /* out */
} PJRT_Executable_Serialize_Args;

typedef struct PJRT_Executable_DeserializeAndLoad_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Client *client;
    const char *serialized_executable;
    size_t serialized_executable_size;
    PJRT_LoadedExecutable *loaded_executable; /* out */
    /* NULL: the compile options recorded in the executable */
    const char *overridden_serialized_compile_options;
    size_t overridden_serialized_compile_options_size;
} PJRT_Executable_DeserializeAndLoad_Args;

typedef struct PJRT_LoadedExecutable_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
} PJRT_LoadedExecutable_Destroy_Args;

typedef struct PJRT_ExecuteOptions {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_SendCallbackInfo **send_callbacks;
    PJRT_RecvCallbackInfo **recv_callbacks;
    size_t num_send_ops;
    size_t num_recv_ops;
    int launch_id;
    const int64_t *non_donatable_input_indices;
    size_t num_non_donatable_input_indices;
    PJRT_ExecuteContext *context;
    const char *call_location;
    size_t num_tasks;
    int *task_ids;
    int64_t *incarnation_ids;
} PJRT_ExecuteOptions;

typedef struct PJRT_LoadedExecutable_Execute_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_LoadedExecutable *executable;
    PJRT_ExecuteOptions *options;
    PJRT_Buffer *const *const *argument_lists; /* [num_devices][num_args] */
    size_t num_devices;
    size_t num_args;
    PJRT_Buffer **const *output_lists;    /* [num_devices][outputs], filled in */
    PJRT_Event **device_complete_events;  /* [num_devices], filled in */
    PJRT_Device *execute_device;
} PJRT_LoadedExecutable_Execute_Args;

typedef struct PJRT_Buffer_Destroy_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
} PJRT_Buffer_Destroy_Args;

typedef struct PJRT_Buffer_ToHostBuffer_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *src;
    PJRT_Buffer_MemoryLayout *host_layout;
    void *dst;
    size_t dst_size;
    PJRT_Event *event; /* out */
} PJRT_Buffer_ToHostBuffer_Args;

typedef struct PJRT_Buffer_CopyRawToHost_Args {
    size_t struct_size;
    PJRT_Extension_Base *extension_start;
    PJRT_Buffer *buffer;
    void *dst;
    int64_t offset;
    int64_t transfer_size;
    PJRT_Event *event; /* out */
} PJRT_Buffer_CopyRawToHost_Args;

/* ---- the function table ---- */

typedef void PJRT_Error_Destroy(PJRT_Error_Destroy_Args *args);
typedef void PJRT_Error_Message(PJRT_Error_Message_Args *args);
typedef PJRT_Error *PJRT_Plugin_Initialize(PJRT_Plugin_Initialize_Args *args);
typedef PJRT_Error *PJRT_Event_Destroy(PJRT_Event_Destroy_Args *args);
typedef PJRT_Error *PJRT_Event_Await(PJRT_Event_Await_Args *args);
typedef PJRT_Error *PJRT_Client_Create(PJRT_Client_Create_Args *args);
typedef PJRT_Error *PJRT_Client_PlatformName(PJRT_Client_PlatformName_Args *args);
typedef PJRT_Error *PJRT_Client_PlatformVersion(PJRT_Client_PlatformVersion_Args *args);
typedef PJRT_Error *PJRT_Client_AddressableDevices(PJRT_Client_AddressableDevices_Args *args);
typedef PJRT_Error *PJRT_Client_Compile(PJRT_Client_Compile_Args *args);
typedef PJRT_Error *PJRT_Client_BufferFromHostBuffer(PJRT_Client_BufferFromHostBuffer_Args *args);
typedef PJRT_Error *PJRT_DeviceDescription_Kind(PJRT_DeviceDescription_Kind_Args *args);
typedef PJRT_Error *PJRT_Device_GetDescription(PJRT_Device_GetDescription_Args *args);
typedef PJRT_Error *PJRT_Device_MemoryStats(PJRT_Device_MemoryStats_Args *args);
typedef PJRT_Error *PJRT_LoadedExecutable_GetExecutable(
    PJRT_LoadedExecutable_GetExecutable_Args *args);
typedef PJRT_Error *PJRT_Executable_NumOutputs(PJRT_Executable_NumOutputs_Args *args);
typedef PJRT_Error *PJRT_Executable_Destroy(PJRT_Executable_Destroy_Args *args);
typedef PJRT_Error *PJRT_Executable_Serialize(PJRT_Executable_Serialize_Args *args);
typedef PJRT_Error *PJRT_Executable_DeserializeAndLoad(
    PJRT_Executable_DeserializeAndLoad_Args *args);
typedef PJRT_Error *PJRT_LoadedExecutable_Destroy(PJRT_LoadedExecutable_Destroy_Args *args);
typedef PJRT_Error *PJRT_LoadedExecutable_Execute(PJRT_LoadedExecutable_Execute_Args *args);
typedef PJRT_Error *PJRT_Buffer_Destroy(PJRT_Buffer_Destroy_Args *args);
typedef PJRT_Error *PJRT_Buffer_ToHostBuffer(PJRT_Buffer_ToHostBuffer_Args *args);
typedef PJRT_Error *PJRT_Buffer_CopyRawToHost(PJRT_Buffer_CopyRawToHost_Args *args);

/* The table's entries in order, up to the last one Porta calls: USED(name)
 * for an entry Porta calls (a pointer to the function type of that name),
 * SLOT(name) for one it does not. */
#define PJRT_API_ENTRIES(USED, SLOT)                                                        \
    USED(PJRT_Error_Destroy) USED(PJRT_Error_Message) SLOT(PJRT_Error_GetCode)              \
    USED(PJRT_Plugin_Initialize) SLOT(PJRT_Plugin_Attributes) USED(PJRT_Event_Destroy)      \
    SLOT(PJRT_Event_IsReady) SLOT(PJRT_Event_Error) USED(PJRT_Event_Await)                  \
    SLOT(PJRT_Event_OnReady) USED(PJRT_Client_Create) SLOT(PJRT_Client_Destroy)            \
    USED(PJRT_Client_PlatformName) SLOT(PJRT_Client_ProcessIndex)                           \
    USED(PJRT_Client_PlatformVersion) SLOT(PJRT_Client_Devices)                             \
    USED(PJRT_Client_AddressableDevices) SLOT(PJRT_Client_LookupDevice)                     \
    SLOT(PJRT_Client_LookupAddressableDevice) SLOT(PJRT_Client_AddressableMemories)         \
    USED(PJRT_Client_Compile) SLOT(PJRT_Client_DefaultDeviceAssignment)                     \
    USED(PJRT_Client_BufferFromHostBuffer) SLOT(PJRT_DeviceDescription_Id)                  \
    SLOT(PJRT_DeviceDescription_ProcessIndex) SLOT(PJRT_DeviceDescription_Attributes)       \
    USED(PJRT_DeviceDescription_Kind) SLOT(PJRT_DeviceDescription_DebugString)              \
    SLOT(PJRT_DeviceDescription_ToString) USED(PJRT_Device_GetDescription)                  \
    SLOT(PJRT_Device_IsAddressable) SLOT(PJRT_Device_LocalHardwareId)                       \
    SLOT(PJRT_Device_AddressableMemories) SLOT(PJRT_Device_DefaultMemory)                   \
    USED(PJRT_Device_MemoryStats) SLOT(PJRT_Memory_Id) SLOT(PJRT_Memory_Kind)               \
    SLOT(PJRT_Memory_DebugString) SLOT(PJRT_Memory_ToString)                                \
    SLOT(PJRT_Memory_AddressableByDevices) USED(PJRT_Executable_Destroy)                    \
    SLOT(PJRT_Executable_Name) SLOT(PJRT_Executable_NumReplicas)                            \
    SLOT(PJRT_Executable_NumPartitions) USED(PJRT_Executable_NumOutputs)                    \
    SLOT(PJRT_Executable_SizeOfGeneratedCodeInBytes) SLOT(PJRT_Executable_GetCostAnalysis)  \
    SLOT(PJRT_Executable_OutputMemoryKinds) SLOT(PJRT_Executable_OptimizedProgram)          \
    USED(PJRT_Executable_Serialize) USED(PJRT_LoadedExecutable_Destroy)                     \
    USED(PJRT_LoadedExecutable_GetExecutable) SLOT(PJRT_LoadedExecutable_AddressableDevices) \
    SLOT(PJRT_LoadedExecutable_Delete) SLOT(PJRT_LoadedExecutable_IsDeleted)                \
    USED(PJRT_LoadedExecutable_Execute) USED(PJRT_Executable_DeserializeAndLoad)            \
    SLOT(PJRT_LoadedExecutable_Fingerprint) USED(PJRT_Buffer_Destroy)                       \
    SLOT(PJRT_Buffer_ElementType) SLOT(PJRT_Buffer_Dimensions)                              \
    SLOT(PJRT_Buffer_UnpaddedDimensions) SLOT(PJRT_Buffer_DynamicDimensionIndices)          \
    SLOT(PJRT_Buffer_GetMemoryLayout) SLOT(PJRT_Buffer_OnDeviceSizeInBytes)                 \
    SLOT(PJRT_Buffer_Device) SLOT(PJRT_Buffer_Memory) SLOT(PJRT_Buffer_Delete)              \
    SLOT(PJRT_Buffer_IsDeleted) SLOT(PJRT_Buffer_CopyToDevice)                              \
    USED(PJRT_Buffer_ToHostBuffer) SLOT(PJRT_Buffer_IsOnCpu) SLOT(PJRT_Buffer_ReadyEvent)   \
    SLOT(PJRT_Buffer_UnsafePointer) SLOT(PJRT_Buffer_IncreaseExternalReferenceCount)        \
    SLOT(PJRT_Buffer_DecreaseExternalReferenceCount)                                        \
    SLOT(PJRT_Buffer_OpaqueDeviceMemoryDataPointer) SLOT(PJRT_CopyToDeviceStream_Destroy)   \
    SLOT(PJRT_CopyToDeviceStream_AddChunk) SLOT(PJRT_CopyToDeviceStream_TotalBytes)         \
    SLOT(PJRT_CopyToDeviceStream_GranuleSize) SLOT(PJRT_CopyToDeviceStream_CurrentBytes)    \
    SLOT(PJRT_TopologyDescription_Create) SLOT(PJRT_TopologyDescription_Destroy)            \
    SLOT(PJRT_TopologyDescription_PlatformName) SLOT(PJRT_TopologyDescription_PlatformVersion) \
    SLOT(PJRT_TopologyDescription_GetDeviceDescriptions)                                    \
    SLOT(PJRT_TopologyDescription_Serialize) SLOT(PJRT_TopologyDescription_Attributes)      \
    SLOT(PJRT_Compile) SLOT(PJRT_Executable_OutputElementTypes)                             \
    SLOT(PJRT_Executable_OutputDimensions) SLOT(PJRT_Buffer_CopyToMemory)                   \
    SLOT(PJRT_Client_CreateViewOfDeviceBuffer) SLOT(PJRT_Executable_Fingerprint)            \
    SLOT(PJRT_Client_TopologyDescription) SLOT(PJRT_Executable_GetCompiledMemoryStats)      \
    SLOT(PJRT_Memory_Kind_Id) SLOT(PJRT_ExecuteContext_Create)                              \
    SLOT(PJRT_ExecuteContext_Destroy) USED(PJRT_Buffer_CopyRawToHost)

#define PJRT_API_USED_FIELD(name) name *name;
#define PJRT_API_SLOT_FIELD(name) void (*name)(void);

typedef struct PJRT_Api {
    size_t struct_size; /* the plugin's: entries past it are absent */
    PJRT_Extension_Base *extension_start;
    PJRT_Api_Version pjrt_api_version;
    PJRT_API_ENTRIES(PJRT_API_USED_FIELD, PJRT_API_SLOT_FIELD)
} PJRT_Api;

/* Whether the plugin's table reaches `entry` (newer entries are absent
 * from older plugins) and fills it in. */
#define PJRT_API_HAS(api, entry)                                                            \
    ((api)->struct_size >= offsetof(PJRT_Api, entry) + sizeof(void (*)(void)) &&            \
     (api)->entry != NULL)

typedef const PJRT_Api *PJRT_GetPjrtApi(void);

#endif
