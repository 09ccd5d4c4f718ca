/* The .pt2 archive handle (see pt2_archive.h): the ZIP archive, the
 * program's JSON, and the tensors its payload configs describe. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "io/pt2_archive_config.h"
#include "io/utf8.h"
#include "runtime/device.h"
#include "runtime/tensor.h"

/* A program's JSON nests about seven levels per nested graph (torch.cond
 * branches, ...): room for dozens of them. */
enum { PROGRAM_MAX_DEPTH = 256 };

struct pt2_archive {
    zip_archive *zip;
    char *root; /* "<root>/" */
    char *model;
    json_document *program;
    int64_t major, minor;
    json_document *configs[2]; /* weights, constants: the tensors' names live here */
    pt2_tensor_info *tensors;
    int count;
    const pt2_tensor_info **sorted; /* by name */
};

void pt2_close(pt2_archive *a) {
    if (!a) return;
    for (int i = 0; i < a->count; i++) free((char *)a->tensors[i].entry);
    free(a->tensors);
    free(a->sorted);
    json_document_free(a->configs[0]);
    json_document_free(a->configs[1]);
    json_document_free(a->program);
    free(a->model);
    free(a->root);
    zip_close(a->zip);
    free(a);
}

/* "<root>/<relative>" as a new string. */
static porta_status *path_in(const pt2_archive *a, const char *relative, char **out) {
    size_t length = strlen(a->root) + strlen(relative) + 1;
    *out = malloc(length);
    if (!*out) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for an entry name");
    snprintf(*out, length, "%s%s", a->root, relative);
    return NULL;
}

static const zip_entry *find_in(const pt2_archive *a, const char *relative) {
    char *path;
    porta_status *status = path_in(a, relative, &path);
    if (status) {
        porta_status_free(status);
        return NULL;
    }
    const zip_entry *e = zip_find(a->zip, path);
    free(path);
    return e;
}

/* PyTorch's writer puts every record under one folder named after the
 * file ("model.pt2" -> "model/"); its reader takes that folder from the
 * first record. Records outside it would be unreachable: rejected. */
static porta_status *find_root(pt2_archive *a) {
    const zip_entry *first = zip_entry_at(a->zip, 0);
    if (!first)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected the records of a .pt2 archive, got an empty archive");
    const char *slash = strchr(first->name, '/');
    char quoted[UTF8_EXCERPT_CAP];
    if (!slash)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected every record inside the archive's root folder, got %s first",
                           utf8_excerpt(first->name, first->name_length, quoted, sizeof quoted));
    size_t length = (size_t)(slash - first->name) + 1;
    a->root = malloc(length + 1);
    if (!a->root) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the root's name");
    memcpy(a->root, first->name, length);
    a->root[length] = '\0';
    for (size_t i = 1; i < zip_count(a->zip); i++) {
        const zip_entry *e = zip_entry_at(a->zip, i);
        if (strncmp(e->name, a->root, length)) {
            char root[UTF8_EXCERPT_CAP];
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "expected every record inside the root folder %s, got %s",
                               utf8_excerpt(a->root, length, root, sizeof root),
                               utf8_excerpt(e->name, e->name_length, quoted, sizeof quoted));
        }
    }
    return NULL;
}

static bool entry_is(const zip_entry *e, const char *text) {
    return e->size == strlen(text) && !memcmp(e->data, text, e->size);
}

static porta_status *check_markers(const pt2_archive *a) {
    char quoted[UTF8_EXCERPT_CAP];
    const zip_entry *format = find_in(a, "archive_format");
    if (!format)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected an archive_format record (\"pt2\"), found none: not a .pt2 "
                           "archive");
    if (!entry_is(format, "pt2"))
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected archive_format \"pt2\", got %s",
                           utf8_excerpt((const char *)format->data, (size_t)format->size, quoted,
                                        sizeof quoted));
    /* PyTorch reads a missing archive_version as version 0. */
    const zip_entry *version = find_in(a, "archive_version");
    if (version && !entry_is(version, "0"))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "expected archive_version %d (the version this reader supports), got %s",
                           PT2_ARCHIVE_VERSION,
                           utf8_excerpt((const char *)version->data, (size_t)version->size, quoted,
                                        sizeof quoted));
    const zip_entry *order = find_in(a, "byteorder");
    if (order && !entry_is(order, "little"))
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "expected byteorder \"little\" (the storages' byte order), got %s",
                           utf8_excerpt((const char *)order->data, (size_t)order->size, quoted,
                                        sizeof quoted));
    return NULL;
}

/* The name of models/<name>.json, or NULL for other records. */
static bool model_name_of(const pt2_archive *a, const zip_entry *e, const char **name,
                          size_t *length) {
    size_t root = strlen(a->root), prefix = strlen("models/"), suffix = strlen(".json");
    if (e->name_length <= root + prefix + suffix) return false;
    if (strncmp(e->name + root, "models/", prefix)) return false;
    if (strcmp(e->name + e->name_length - suffix, ".json")) return false;
    *name = e->name + root + prefix;
    *length = e->name_length - root - prefix - suffix;
    return !memchr(*name, '/', *length);
}

static porta_status *choose_model(pt2_archive *a, const char *wanted) {
    size_t found = 0;
    const char *name = NULL;
    size_t length = 0;
    char list[512] = "";
    for (size_t i = 0; i < zip_count(a->zip); i++) {
        const char *n;
        size_t l;
        if (!model_name_of(a, zip_entry_at(a->zip, i), &n, &l)) continue;
        size_t used = strlen(list);
        if (used + 4 < sizeof list)
            snprintf(list + used, sizeof list - used, "%s%.*s", found ? ", " : "",
                     (int)(l < 64 ? l : 64), n);
        found++;
        if (!wanted ? found == 1 : (strlen(wanted) == l && !memcmp(n, wanted, l))) {
            name = n;
            length = l;
        }
    }
    if (wanted && !name)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected a program called %.64s (models/%.64s.json), got %s", wanted,
                           wanted, found ? list : "none");
    if (!found)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected a program in models/<name>.json, found none");
    if (!wanted && found > 1)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "expected one program or a program's name, got %zu programs: %s",
                           found, list);
    a->model = strndup(name, length);
    if (!a->model) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the model's name");
    return NULL;
}

static porta_status *read_schema_version(pt2_archive *a) {
    const json_value *root = json_document_root(a->program);
    if (root->type != JSON_OBJECT)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "models/%s.json: expected an ExportedProgram object, got %s", a->model,
                           json_type_name(root->type));
    const json_value *version = json_object_get(root, "schema_version");
    const json_value *major = version ? json_object_get(version, "major") : NULL;
    const json_value *minor = version ? json_object_get(version, "minor") : NULL;
    if (!major || !minor || major->type != JSON_NUMBER || !major->as.number.is_integer ||
        minor->type != JSON_NUMBER || !minor->as.number.is_integer)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "models/%s.json: expected \"schema_version\": {\"major\": integer, "
                           "\"minor\": integer}, got %s",
                           a->model, version ? "another value" : "none");
    a->major = major->as.number.integer;
    a->minor = minor->as.number.integer;
    /* Minor versions only add to the schema; PyTorch's loader checks the
     * major version alone. */
    if (a->major != PT2_SCHEMA_MAJOR)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "models/%s.json: expected schema version %d.x (this reader follows "
                           "%d.%d, PyTorch 2.13), got %lld.%lld",
                           a->model, PT2_SCHEMA_MAJOR, PT2_SCHEMA_MAJOR, PT2_SCHEMA_MINOR,
                           (long long)a->major, (long long)a->minor);
    return NULL;
}

/* "<a><b><c>" as a new string: record names built from the model's name,
 * which may be long. */
static porta_status *join(const char *a, const char *b, const char *c, char **out) {
    size_t length = strlen(a) + strlen(b) + strlen(c) + 1;
    *out = malloc(length);
    if (!*out) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for a record name");
    snprintf(*out, length, "%s%s%s", a, b, c);
    return NULL;
}

static porta_status *read_program(pt2_archive *a) {
    char *relative;
    PORTA_TRY(join("models/", a->model, ".json", &relative));
    const zip_entry *e = find_in(a, relative);
    porta_status *status =
        e ? json_parse((const char *)e->data, (size_t)e->size, PROGRAM_MAX_DEPTH, &a->program)
          : porta_error(PORTA_ERR_INTERNAL, "%s vanished", relative);
    if (status) status = porta_error_context(status, "%s", relative);
    free(relative);
    return status ? status : read_schema_version(a);
}

static porta_status *read_config(pt2_archive *a, pt2_tensor_kind kind) {
    const char *directory = kind == PT2_WEIGHT ? "data/weights/" : "data/constants/";
    const char *what = kind == PT2_WEIGHT ? "weights" : "constants";
    char *legacy = NULL, *relative = NULL, *name = NULL;
    porta_status *status = join(directory, a->model, ".pt", &legacy);
    if (!status) status = join(a->model, "_", what, &name);
    if (!status) status = join(directory, name, "_config.json", &relative);
    const zip_entry *e = status ? NULL : find_in(a, relative);
    if (status) {
        /* no memory: status says so */
    } else if (find_in(a, legacy)) {
        status = porta_error(PORTA_ERR_UNSUPPORTED,
                             "the archive holds its %s only pickled (%s, the format before "
                             "payload configs); Porta never unpickles: save the program again "
                             "with torch.export.save",
                             what, legacy);
    } else if (!e) {
        status = porta_error(PORTA_ERR_INVALID_ARGUMENT, "expected the record %s, found none",
                             relative);
    } else {
        pt2_config_source source = {
            .zip = a->zip, .root = a->root, .config_path = relative, .directory = directory,
            .kind = kind};
        status = pt2_config_read(&source, (const char *)e->data, (size_t)e->size,
                                 &a->configs[kind == PT2_WEIGHT ? 0 : 1], &a->tensors, &a->count);
    }
    free(legacy);
    free(name);
    free(relative);
    return status;
}

static int by_name(const void *x, const void *y) {
    return strcmp((*(const pt2_tensor_info *const *)x)->name,
                  (*(const pt2_tensor_info *const *)y)->name);
}

static porta_status *index_names(pt2_archive *a) {
    a->sorted = malloc((size_t)(a->count ? a->count : 1) * sizeof *a->sorted);
    if (!a->sorted) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the names' index");
    for (int i = 0; i < a->count; i++) a->sorted[i] = &a->tensors[i];
    qsort(a->sorted, (size_t)a->count, sizeof *a->sorted, by_name);
    for (int i = 1; i < a->count; i++)
        if (!strcmp(a->sorted[i - 1]->name, a->sorted[i]->name)) {
            char quoted[UTF8_EXCERPT_CAP];
            const char *name = a->sorted[i]->name;
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "expected each tensor name once among weights and constants, got "
                               "%s twice",
                               utf8_excerpt(name, strlen(name), quoted, sizeof quoted));
        }
    return NULL;
}

static porta_status *load(zip_archive *zip, const char *model, pt2_archive **out) {
    pt2_archive *a = calloc(1, sizeof *a);
    if (!a) {
        zip_close(zip);
        return porta_error(PORTA_ERR_OUT_OF_MEMORY, "no memory for the archive's handle");
    }
    a->zip = zip;
    porta_status *status = NULL;
    CORE_TRY_GOTO(status, find_root(a), fail);
    CORE_TRY_GOTO(status, check_markers(a), fail);
    CORE_TRY_GOTO(status, choose_model(a, model), fail);
    CORE_TRY_GOTO(status, read_program(a), fail);
    CORE_TRY_GOTO(status, read_config(a, PT2_WEIGHT), fail);
    CORE_TRY_GOTO(status, read_config(a, PT2_CONSTANT), fail);
    CORE_TRY_GOTO(status, index_names(a), fail);
    *out = a;
    return NULL;
fail:
    pt2_close(a);
    return status;
}

porta_status *pt2_open(const char *path, const char *model, pt2_archive **out) {
    if (!path || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "pt2_open: expected a path and an output pointer, got NULL");
    *out = NULL;
    zip_archive *zip;
    porta_status *status = zip_open(path, &zip);
    if (!status) status = load(zip, model, out);
    return status ? porta_error_context(status, "pt2 archive %s", path) : NULL;
}

porta_status *pt2_parse(const void *data, size_t size, const char *model, pt2_archive **out) {
    if (!out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "pt2_parse: expected an output pointer, got NULL");
    *out = NULL;
    zip_archive *zip;
    porta_status *status = zip_parse(data, size, &zip);
    if (!status) status = load(zip, model, out);
    return status ? porta_error_context(status, "pt2 archive") : NULL;
}

const char *pt2_model_name(const pt2_archive *a) { return a ? a->model : NULL; }

const json_value *pt2_program(const pt2_archive *a) {
    return a ? json_document_root(a->program) : NULL;
}

void pt2_schema_version(const pt2_archive *a, int64_t *major, int64_t *minor) {
    if (major) *major = a ? a->major : 0;
    if (minor) *minor = a ? a->minor : 0;
}

int pt2_tensor_count(const pt2_archive *a) { return a ? a->count : 0; }

const pt2_tensor_info *pt2_tensor_at(const pt2_archive *a, int index) {
    if (!a || index < 0 || index >= a->count) return NULL;
    return &a->tensors[index];
}

const pt2_tensor_info *pt2_tensor_find(const pt2_archive *a, const char *name) {
    if (!a || !name) return NULL;
    int lo = 0, hi = a->count;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int order = strcmp(a->sorted[mid]->name, name);
        if (order == 0) return a->sorted[mid];
        if (order < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Porta's kernels take a bool byte to be 0 or 1, as PyTorch does. */
static porta_status *check_bools(const pt2_tensor_info *t, const unsigned char *data,
                                 size_t bytes) {
    for (size_t i = 0; i < bytes; i++)
        if (data[i] > 1)
            return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                               "%s: expected bool elements of 0 or 1, got %u at element %zu",
                               t->entry, data[i], i);
    return NULL;
}

/* A buffer holding the storage: a view of the archive's memory, or a copy
 * on the device. */
static porta_status *storage_buffer(pt2_archive *a, const zip_entry *e, porta_dtype dtype,
                                    porta_device *device, porta_buffer **out) {
    bool host = device->info.capabilities & PORTA_CAP_HOST_MEMORY;
    /* Unaligned elements would be undefined behaviour for the kernels. */
    if (host && (uintptr_t)e->data % porta_dtype_size(dtype) == 0) {
        zip_retain(a->zip);
        porta_status *status =
            rt_buffer_wrap_host(device, e->data, (size_t)e->size, zip_release, a->zip, out);
        if (status) zip_release(a->zip);
        return status;
    }
    int64_t numel = (int64_t)(e->size / porta_dtype_size(dtype));
    porta_tensor *copy;
    PORTA_TRY(porta_tensor_empty(device, dtype, 1, &numel, &copy));
    porta_buffer *buffer = porta_tensor_buffer(copy);
    porta_status *status = porta_buffer_write(buffer, 0, e->data, (size_t)e->size);
    if (!status) {
        porta_buffer_retain(buffer);
        *out = buffer;
    }
    porta_tensor_release(copy);
    return status;
}

porta_status *pt2_tensor_get(pt2_archive *a, const char *name, porta_device *device,
                             porta_tensor **out) {
    if (!a || !name || !device || !out)
        return porta_error(PORTA_ERR_INVALID_ARGUMENT,
                           "pt2_tensor_get: expected an archive, a name, a device and an output "
                           "pointer, got NULL");
    char quoted[UTF8_EXCERPT_CAP];
    utf8_excerpt(name, strlen(name), quoted, sizeof quoted);
    const pt2_tensor_info *t = pt2_tensor_find(a, name);
    if (!t)
        return porta_error(PORTA_ERR_OUT_OF_RANGE,
                           "pt2_tensor_get: expected the name of one of the archive's %d tensors, "
                           "got %s",
                           a->count, quoted);
    if (t->pickled)
        return porta_error(PORTA_ERR_UNSUPPORTED,
                           "tensor %s: stored only pickled (a tensor subclass or an object) in %s; "
                           "Porta never unpickles",
                           quoted, t->entry);
    const zip_entry *e = zip_find(a->zip, t->entry);
    if (!e) return porta_error(PORTA_ERR_INTERNAL, "%s vanished", t->entry);
    if (e->size == 0) /* a view of no element (checked when opened) */
        return porta_tensor_empty(device, t->dtype, t->rank, t->sizes, out);
    if (t->dtype == PORTA_BOOL) PORTA_TRY(check_bools(t, e->data, (size_t)e->size));
    porta_buffer *buffer;
    PORTA_TRY(storage_buffer(a, e, t->dtype, device, &buffer));
    porta_status *status = porta_tensor_view(buffer, t->dtype, t->rank, t->sizes, t->strides,
                                             t->storage_offset, out);
    porta_buffer_release(buffer); /* the tensor holds its own reference */
    return status;
}
