/* The .pt2 reader: the fixture written by torch.export.save
 * (tests/data/tiny.pt2, made with tests/data/make_pt2.py) read tensor by
 * tensor against the same tensors saved by the safetensors package, and a
 * corpus of hostile archives made here from the fixture's records, each
 * rejected with a message naming what is wrong. */
#include <libgen.h>
#include <stdlib.h>
#include <string.h>

#include "core/status.h"
#include "runtime/tensor.h"
#include "io/pt2_archive.h"
#include "io/zip.h"
#include "porta_io.h"
#include "test.h"

/* ---- helpers ---- */

static void data_path(const char *file, char *out, size_t cap) {
    char source[] = __FILE__;
    snprintf(out, cap, "%s/data/%s", dirname(source), file);
}

/* The fixture's records (all but the pickled sample inputs), copied. */
typedef struct records {
    char *names[32];
    char *data[32];
    size_t sizes[32];
    size_t count;
} records;

static void records_free(records *r) {
    for (size_t i = 0; i < r->count; i++) {
        free(r->names[i]);
        free(r->data[i]);
    }
    r->count = 0;
}

static bool set_record(records *r, const char *name, const void *data, size_t size) {
    size_t i = 0;
    while (i < r->count && strcmp(r->names[i], name)) i++;
    if (i == r->count) {
        if (r->count == 32) return false;
        r->names[r->count++] = strdup(name);
    } else {
        free(r->data[i]);
    }
    r->data[i] = malloc(size + 1);
    if (!r->names[i] || !r->data[i]) return false;
    memcpy(r->data[i], data, size);
    r->data[i][size] = '\0';
    r->sizes[i] = size;
    return true;
}

static bool drop_record(records *r, const char *name) {
    for (size_t i = 0; i < r->count; i++)
        if (!strcmp(r->names[i], name)) {
            free(r->names[i]);
            free(r->data[i]);
            r->count--;
            r->names[i] = r->names[r->count];
            r->data[i] = r->data[r->count];
            r->sizes[i] = r->sizes[r->count];
            return true;
        }
    return false;
}

static const char *record_text(const records *r, const char *name) {
    for (size_t i = 0; i < r->count; i++)
        if (!strcmp(r->names[i], name)) return r->data[i];
    return NULL;
}

static bool load_fixture(records *out) {
    memset(out, 0, sizeof *out);
    char path[1024];
    data_path("tiny.pt2", path, sizeof path);
    zip_archive *zip = NULL;
    porta_status *status = zip_open(path, &zip);
    if (status) {
        test_fail(__FILE__, __LINE__, "the fixture: %s", porta_status_message(status));
        porta_status_free(status);
        return false;
    }
    bool ok = true;
    for (size_t i = 0; i < zip_count(zip) && ok; i++) {
        const zip_entry *e = zip_entry_at(zip, i);
        if (strstr(e->name, "sample_inputs")) continue;
        ok = set_record(out, e->name, e->data, (size_t)e->size);
    }
    zip_close(zip);
    if (!ok) test_fail(__FILE__, __LINE__, "no memory for the fixture's records");
    return ok;
}

static porta_status *parse_records(const records *r, const char *model, pt2_archive **out) {
    zip_write_entry entries[32];
    for (size_t i = 0; i < r->count; i++)
        entries[i] = (zip_write_entry){r->names[i], r->data[i], r->sizes[i]};
    zip_write_options options = {.descriptor = true, .zip64_end = true, .alignment = 64};
    unsigned char *bytes;
    size_t size;
    PORTA_TRY(zip_write_memory(entries, r->count, &options, &bytes, &size));
    porta_status *status = pt2_parse(bytes, size, model, out);
    free(bytes);
    return status;
}

/* `text` with its first `from` replaced by `to`; NULL (a recorded failure)
 * when `from` is not there, so a fixture that changed cannot pass. */
static char *replace_once(const char *text, const char *from, const char *to) {
    const char *at = text ? strstr(text, from) : NULL;
    if (!at) {
        test_fail(__FILE__, __LINE__, "the fixture has no %s", from);
        return NULL;
    }
    size_t head = (size_t)(at - text), length = strlen(text) - strlen(from) + strlen(to);
    char *out = malloc(length + 1);
    if (!out) return NULL;
    memcpy(out, text, head);
    strcpy(out + head, to);
    strcat(out, at + strlen(from));
    return out;
}

static const char *const weights_config = "tiny/data/weights/model_weights_config.json";
static const char *const constants_config = "tiny/data/constants/model_constants_config.json";
static const char *const program_json = "tiny/models/model.json";

/* The fixture with its first `from` in record `name` replaced by `to`
 * (the whole record when `from` is NULL). */
static porta_status *parse_edited(const char *name, const char *from, const char *to,
                                  pt2_archive **out) {
    records r;
    if (!load_fixture(&r)) return porta_error(PORTA_ERR_INTERNAL, "test: no fixture");
    char *edited = from ? replace_once(record_text(&r, name), from, to) : strdup(to);
    porta_status *status;
    if (!edited || !set_record(&r, name, edited, strlen(edited)))
        status = porta_error(PORTA_ERR_INTERNAL, "test: the edit failed");
    else
        status = parse_records(&r, NULL, out);
    free(edited);
    records_free(&r);
    return status;
}

static porta_status *open_edited(const char *name, const char *from, const char *to) {
    pt2_archive *archive = NULL;
    porta_status *status = parse_edited(name, from, to, &archive);
    pt2_close(archive);
    return status;
}

static unsigned char *host_bytes(const porta_tensor *t, size_t *bytes) {
    *bytes = (size_t)porta_tensor_numel(t) * porta_dtype_size(porta_tensor_dtype(t));
    unsigned char *data = malloc(*bytes ? *bytes : 1);
    porta_status *status = data ? porta_tensor_to_host(t, data, *bytes) : NULL;
    if (status) {
        test_fail(__FILE__, __LINE__, "tensor_to_host: %s", porta_status_message(status));
        porta_status_free(status);
        free(data);
        return NULL;
    }
    return data;
}

/* ---- the fixture ---- */

TEST(test_pt2_reads_the_archive_torch_export_wrote) {
    char path[1024], expected_path[1024];
    data_path("tiny.pt2", path, sizeof path);
    data_path("tiny_expected.safetensors", expected_path, sizeof expected_path);
    pt2_archive *archive = NULL;
    porta_safetensors *expected = NULL;
    CHECK_OK(pt2_open(path, NULL, &archive));
    porta_status *status = porta_safetensors_open(expected_path, &expected);
    if (status) {
        pt2_close(archive);
        CHECK_OK(status);
    }
    CHECK(!strcmp(pt2_model_name(archive), "model"));
    int64_t major, minor;
    pt2_schema_version(archive, &major, &minor);
    CHECK(major == PT2_SCHEMA_MAJOR && minor >= 0);
    const json_value *program = pt2_program(archive);
    CHECK(program && json_object_get(program, "graph_module"));
    /* Every tensor the safetensors file has, equal; nothing more. */
    CHECK(pt2_tensor_count(archive) == porta_safetensors_count(expected));
    porta_tensor *kept = NULL;
    for (int i = 0; i < porta_safetensors_count(expected); i++) {
        const char *name = porta_safetensors_name(expected, i);
        porta_tensor *want = NULL, *got = NULL;
        status = porta_safetensors_get(expected, name, test_cpu(), &want);
        if (!status) status = pt2_tensor_get(archive, name, test_cpu(), &got);
        CHECK_MSG(!status, "%s: %s", name, status ? porta_status_message(status) : "");
        porta_status_free(status);
        if (want && got) {
            CHECK_MSG(porta_tensor_dtype(got) == porta_tensor_dtype(want) &&
                          porta_tensor_rank(got) == porta_tensor_rank(want) &&
                          !memcmp(porta_tensor_sizes(got), porta_tensor_sizes(want),
                                  (size_t)porta_tensor_rank(want) * sizeof(int64_t)),
                      "%s: dtype or shape differs", name);
            size_t n1, n2;
            unsigned char *a = host_bytes(got, &n1), *b = host_bytes(want, &n2);
            CHECK_MSG(a && b && n1 == n2 && !memcmp(a, b, n1), "%s: contents differ", name);
            free(a);
            free(b);
            /* Aligned storages are views of the mapping, not copies. */
            CHECK_MSG(porta_tensor_buffer(got)->release != NULL, "%s: copied", name);
        }
        if (got && !strcmp(name, "transposed")) {
            kept = got; /* outlives the archive's handle */
            got = NULL;
        }
        porta_tensor_release(want);
        porta_tensor_release(got);
    }
    const pt2_tensor_info *a = pt2_tensor_find(archive, "lin.weight"),
                          *b = pt2_tensor_find(archive, "tied.weight"),
                          *t = pt2_tensor_find(archive, "transposed"),
                          *m = pt2_tensor_find(archive, "middle"),
                          *c = pt2_tensor_find(archive, "constant");
    CHECK(a && b && !strcmp(a->entry, b->entry) && a->is_param && a->requires_grad);
    CHECK(t && t->strides[0] == 1 && t->strides[1] == 3 && !t->is_param);
    CHECK(m && m->storage_offset == 3 && m->storage_bytes == 40);
    CHECK(c && c->kind == PT2_CONSTANT && !strcmp(c->entry, "tiny/data/constants/tensor_0"));
    CHECK(pt2_tensor_find(archive, "missing") == NULL);
    porta_tensor *none = NULL;
    CHECK_ERR(pt2_tensor_get(archive, "missing", test_cpu(), &none), PORTA_ERR_OUT_OF_RANGE,
              "got \"missing\"");
    pt2_close(archive);
    porta_safetensors_close(expected);
    if (kept) {
        double *values = test_to_doubles(kept);
        static const double want[6] = {0, 3, 1, 4, 2, 5}; /* arange(6).reshape(2, 3).t() */
        CHECK(values && test_close("transposed after close", values, want, 6, 0, 0));
        free(values);
        porta_tensor_release(kept);
    }
}

TEST(test_pt2_unaligned_storages_are_copied_and_other_layouts_read) {
    records r;
    if (!load_fixture(&r)) return;
    /* A first record of one byte puts every storage after it at an odd
     * offset (all the fixture's names are 26 bytes, its sizes multiples of
     * 4) in Python's zipfile layout: no padding, sizes in the local headers. */
    zip_write_entry entries[33] = {{"tiny/x", "1", 1}};
    for (size_t i = 0; i < r.count; i++)
        entries[i + 1] = (zip_write_entry){r.names[i], r.data[i], r.sizes[i]};
    zip_write_options options = {0};
    unsigned char *bytes = NULL;
    size_t size;
    pt2_archive *archive = NULL;
    porta_status *status = zip_write_memory(entries, r.count + 1, &options, &bytes, &size);
    if (!status) status = pt2_parse(bytes, size, "model", &archive);
    CHECK_OK(status);
    zip_archive *zip = NULL;
    status = zip_parse(bytes, size, &zip);
    CHECK_OK(status);
    int copies = 0;
    for (int i = 0; i < pt2_tensor_count(archive); i++) {
        const pt2_tensor_info *t = pt2_tensor_at(archive, i);
        const zip_entry *e = zip_find(zip, t->entry);
        bool aligned = e && e->data_offset % porta_dtype_size(t->dtype) == 0;
        porta_tensor *x = NULL;
        status = pt2_tensor_get(archive, t->name, test_cpu(), &x);
        CHECK_MSG(!status, "%s: %s", t->name, status ? porta_status_message(status) : "");
        porta_status_free(status);
        bool copy = x && porta_tensor_buffer(x)->release == NULL;
        CHECK_MSG(copy == !aligned, "%s: %s storage, %s", t->name,
                  aligned ? "an aligned" : "an unaligned", copy ? "copied" : "viewed");
        copies += copy;
        if (x && !strcmp(t->name, "transposed")) {
            double *values = test_to_doubles(x);
            static const double want[6] = {0, 3, 1, 4, 2, 5};
            CHECK(values && test_close("transposed copy", values, want, 6, 0, 0));
            free(values);
        }
        porta_tensor_release(x);
    }
    CHECK(copies >= 5); /* the odd first record moves the six weight storages but the mask */
    zip_close(zip);
    pt2_close(archive);
    free(bytes);
    records_free(&r);
}

/* ---- hostile archives ---- */

TEST(test_pt2_rejects_bad_markers_and_versions) {
    records r;
    if (!load_fixture(&r)) return;
    pt2_archive *archive = NULL;
    set_record(&r, "tiny/archive_format", "pt3", 3);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT,
              "expected archive_format \"pt2\", got \"pt3\"");
    drop_record(&r, "tiny/archive_format");
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT, "not a .pt2");
    set_record(&r, "tiny/archive_format", "pt2", 3);
    set_record(&r, "tiny/archive_version", "1", 1);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_UNSUPPORTED,
              "expected archive_version 0 (the version this reader supports), got \"1\"");
    set_record(&r, "tiny/archive_version", "0", 1);
    set_record(&r, "tiny/byteorder", "big", 3);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_UNSUPPORTED, "got \"big\"");
    set_record(&r, "tiny/byteorder", "little", 6);
    set_record(&r, "elsewhere/x", "1", 1);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT,
              "inside the root folder \"tiny/\", got \"elsewhere/x\"");
    drop_record(&r, "elsewhere/x");
    set_record(&r, "tiny/data/weights/model.pt", "\x80\x02", 2);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_UNSUPPORTED, "never unpickles");
    drop_record(&r, "tiny/data/weights/model.pt");
    drop_record(&r, constants_config);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT,
              "expected the record data/constants/model_constants_config.json");
    CHECK(archive == NULL);
    records_free(&r);

    CHECK_ERR(open_edited(program_json, "\"schema_version\": {\"major\": 8",
                          "\"schema_version\": {\"major\": 9"),
              PORTA_ERR_UNSUPPORTED, "expected schema version 8.x (this reader follows 8.");
    CHECK_ERR(open_edited(program_json, "\"schema_version\"", "\"schema_versio\""),
              PORTA_ERR_INVALID_ARGUMENT, "expected \"schema_version\"");
    CHECK_ERR(open_edited(program_json, "{\"graph_module\"", "{\"graph_module\" 1"),
              PORTA_ERR_INVALID_ARGUMENT, "models/model.json");
}

TEST(test_pt2_chooses_among_programs) {
    records r;
    if (!load_fixture(&r)) return;
    const char *program = record_text(&r, program_json);
    set_record(&r, "tiny/models/other.json", program, strlen(program));
    set_record(&r, "tiny/data/weights/other_weights_config.json", "{\"config\": {}}", 14);
    set_record(&r, "tiny/data/constants/other_constants_config.json", "{\"config\": {}}", 14);
    pt2_archive *archive = NULL;
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT,
              "expected one program or a program's name, got 2 programs");
    CHECK_ERR(parse_records(&r, "third", &archive), PORTA_ERR_INVALID_ARGUMENT,
              "expected a program called third");
    CHECK_OK(parse_records(&r, "other", &archive));
    CHECK(!strcmp(pt2_model_name(archive), "other") && pt2_tensor_count(archive) == 0);
    pt2_close(archive);
    records_free(&r);
}

typedef struct config_case {
    const char *what;
    const char *record;
    const char *from, *to;
    porta_code code;
    const char *needle;
} config_case;

static const config_case config_cases[] = {
    {"complex dtype", "weights", "\"dtype\": 7", "\"dtype\": 10", PORTA_ERR_DTYPE,
     "tensor \"lin.weight\": expected a dtype among"},
    {"symbolic size", "weights", "\"sizes\": [{\"as_int\": 3}", "\"sizes\": [{\"as_expr\": {}}",
     PORTA_ERR_UNSUPPORTED, "got a symbolic one"},
    {"view past the storage", "weights", "\"sizes\": [{\"as_int\": 3}, {\"as_int\": 4}]",
     "\"sizes\": [{\"as_int\": 3}, {\"as_int\": 5}]", PORTA_ERR_OUT_OF_RANGE,
     "reaching past the end"},
    {"offset past the storage", "weights", "\"storage_offset\": {\"as_int\": 0}",
     "\"storage_offset\": {\"as_int\": 1}", PORTA_ERR_OUT_OF_RANGE, "(offset 1, last element 12)"},
    {"overflowing product", "weights",
     "\"sizes\": [{\"as_int\": 3}, {\"as_int\": 4}], \"requires_grad\": true, \"device\": "
     "{\"type\": \"cpu\", \"index\": null}, \"strides\": [{\"as_int\": 4}, {\"as_int\": 1}]",
     "\"sizes\": [{\"as_int\": 4611686018427387904}, {\"as_int\": 4}], \"requires_grad\": true, "
     "\"device\": {\"type\": \"cpu\", \"index\": null}, \"strides\": [{\"as_int\": 0}, "
     "{\"as_int\": 0}]",
     PORTA_ERR_INVALID_ARGUMENT, "overflowing product at dimension 1"},
    {"overflowing strides", "weights", "\"strides\": [{\"as_int\": 4}",
     "\"strides\": [{\"as_int\": 9223372036854775807}", PORTA_ERR_INVALID_ARGUMENT,
     "overflow at dimension 0"},
    {"negative size", "weights", "\"sizes\": [{\"as_int\": 3}", "\"sizes\": [{\"as_int\": -3}",
     PORTA_ERR_INVALID_ARGUMENT, "to be non-negative, got -3"},
    {"17 dimensions", "weights", "\"sizes\": [{\"as_int\": 3}, {\"as_int\": 4}]",
     "\"sizes\": [{\"as_int\": 3}, {\"as_int\": 4}, "
     "{\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}, {\"as_int\": 1}]",
     PORTA_ERR_UNSUPPORTED, "at most 16 dimensions"},
    {"strides of another rank", "weights", "\"strides\": [{\"as_int\": 4}, {\"as_int\": 1}]",
     "\"strides\": [{\"as_int\": 1}]", PORTA_ERR_INVALID_ARGUMENT,
     "one stride per dimension (2), got 1"},
    {"partial elements", "weights",
     "\"lin.bias\": {\"path_name\": \"weight_1\", \"is_param\": true, \"use_pickle\": false, "
     "\"tensor_meta\": {\"dtype\": 7",
     "\"lin.bias\": {\"path_name\": \"weight_1\", \"is_param\": true, \"use_pickle\": false, "
     "\"tensor_meta\": {\"dtype\": 5",
     PORTA_ERR_INVALID_ARGUMENT, "to hold whole int64 elements (8 bytes each), got 12 bytes"},
    {"path outside the folder", "weights", "\"path_name\": \"weight_0\"",
     "\"path_name\": \"../weight_0\"", PORTA_ERR_INVALID_ARGUMENT, "a file name (no '/'"},
    {"missing storage", "weights", "\"path_name\": \"weight_0\"", "\"path_name\": \"weight_9\"",
     PORTA_ERR_INVALID_ARGUMENT, "to hold its entry tiny/data/weights/weight_9"},
    {"foreign prefix", "weights", "\"path_name\": \"weight_0\"", "\"path_name\": \"tensor_0\"",
     PORTA_ERR_INVALID_ARGUMENT, "to hold its entry tiny/data/weights/tensor_0"},
    {"sparse layout", "weights", "\"layout\": 7", "\"layout\": 1", PORTA_ERR_UNSUPPORTED,
     "expected a strided tensor"},
    {"unknown field", "weights", "\"is_param\": true", "\"is_param\": true, \"extra\": 1",
     PORTA_ERR_INVALID_ARGUMENT, "only the schema's fields in the payload, got \"extra\""},
    {"missing field", "weights", "\"requires_grad\": true, ", "", PORTA_ERR_INVALID_ARGUMENT,
     "expected the field \"requires_grad\""},
    {"bool as a number", "weights", "\"is_param\": true", "\"is_param\": 1",
     PORTA_ERR_INVALID_ARGUMENT, "\"is_param\" to be true or false"},
    {"null tensor_meta", "constants", NULL,
     "{\"config\": {\"constant\": {\"path_name\": \"tensor_0\", \"is_param\": false, "
     "\"use_pickle\": false, \"tensor_meta\": null}}}",
     PORTA_ERR_INVALID_ARGUMENT, "expected a \"tensor_meta\" for raw (unpickled) storage, got null"},
    {"config not an object", "constants", NULL, "{\"config\": []}", PORTA_ERR_INVALID_ARGUMENT,
     "expected \"config\" to be an object, got an array"},
    {"same name twice", "constants", "\"constant\"", "\"lin.weight\"", PORTA_ERR_INVALID_ARGUMENT,
     "got \"lin.weight\" twice"},
    {"bad JSON", "constants", "{\"config\"", "{\"config\",", PORTA_ERR_INVALID_ARGUMENT,
     "data/constants/model_constants_config.json"},
    {"duplicate key", "constants", "\"is_param\": false", "\"is_param\": false, \"is_param\": false",
     PORTA_ERR_INVALID_ARGUMENT, "expected unique keys in the object, got \"is_param\" twice"},
};

TEST(test_pt2_rejects_each_bad_config) {
    for (size_t i = 0; i < sizeof config_cases / sizeof config_cases[0]; i++) {
        const config_case *c = &config_cases[i];
        const char *record = !strcmp(c->record, "weights") ? weights_config : constants_config;
        porta_status *status = open_edited(record, c->from, c->to);
        CHECK_MSG(status, "%s: accepted", c->what);
        if (!status) continue;
        CHECK_MSG(porta_status_code(status) == c->code &&
                      strstr(porta_status_message(status), c->needle),
                  "%s: expected code %d and \"%s\", got %d: %s", c->what, (int)c->code, c->needle,
                  (int)porta_status_code(status), porta_status_message(status));
        porta_status_free(status);
    }
}

/* Damage found only when a tensor is taken: pickled storages, bool bytes
 * other than 0 and 1, and storages exported without their data. */
TEST(test_pt2_refuses_tensors_it_cannot_read) {
    pt2_archive *archive = NULL;
    porta_tensor *t = NULL;
    CHECK_OK(parse_edited(weights_config, "\"use_pickle\": false", "\"use_pickle\": true",
                          &archive));
    const pt2_tensor_info *info = pt2_tensor_find(archive, "lin.weight");
    CHECK(info && info->pickled);
    CHECK_ERR(pt2_tensor_get(archive, "lin.weight", test_cpu(), &t), PORTA_ERR_UNSUPPORTED,
              "stored only pickled (a tensor subclass or an object) in "
              "tiny/data/weights/weight_0; Porta never unpickles");
    CHECK_OK(pt2_tensor_get(archive, "lin.bias", test_cpu(), &t)); /* the others still load */
    porta_tensor_release(t);
    pt2_close(archive);

    /* A custom object among the constants: listed, refused when taken. */
    records r;
    if (!load_fixture(&r)) return;
    static const char objects[] =
        "{\"config\": {\"constant\": {\"path_name\": \"custom_obj_0\", \"is_param\": false, "
        "\"use_pickle\": true, \"tensor_meta\": null}}}";
    set_record(&r, constants_config, objects, strlen(objects));
    set_record(&r, "tiny/data/constants/custom_obj_0", "\x80\x04.", 3);
    CHECK_OK(parse_records(&r, NULL, &archive));
    CHECK_ERR(pt2_tensor_get(archive, "constant", test_cpu(), &t), PORTA_ERR_UNSUPPORTED,
              "in tiny/data/constants/custom_obj_0; Porta never unpickles");
    pt2_close(archive);
    records_free(&r);

    if (!load_fixture(&r)) return;
    set_record(&r, "tiny/data/weights/weight_5", "\x01\x02\x01", 3); /* the bool mask */
    CHECK_OK(parse_records(&r, NULL, &archive));
    CHECK_ERR(pt2_tensor_get(archive, "mask", test_cpu(), &t), PORTA_ERR_INVALID_ARGUMENT,
              "expected bool elements of 0 or 1, got 2 at element 1");
    pt2_close(archive);
    archive = NULL;
    set_record(&r, "tiny/data/weights/weight_5", "", 0);
    CHECK_ERR(parse_records(&r, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT,
              "got an empty entry tiny/data/weights/weight_5 (a tensor exported without its data)");
    records_free(&r);
}

TEST(test_pt2_rejects_every_truncation_of_the_fixture) {
    char path[1024];
    data_path("tiny.pt2", path, sizeof path);
    FILE *f = fopen(path, "rb");
    CHECK(f != NULL);
    if (!f) return;
    unsigned char *bytes = malloc(1 << 16);
    size_t size = bytes ? fread(bytes, 1, 1 << 16, f) : 0;
    fclose(f);
    CHECK(size > 1000 && size < (1 << 16));
    for (size_t cut = 0; cut < size; cut += 7) {
        pt2_archive *archive = NULL;
        porta_status *status = pt2_parse(bytes, cut, NULL, &archive);
        CHECK_MSG(status && strstr(porta_status_message(status), "expected"),
                  "a cut at %zu of %zu bytes: %s", cut, size,
                  status ? porta_status_message(status) : "accepted");
        porta_status_free(status);
        pt2_close(archive);
    }
    free(bytes);
}

TEST(test_pt2_argument_errors) {
    pt2_archive *archive = NULL;
    CHECK_ERR(pt2_open(NULL, NULL, &archive), PORTA_ERR_INVALID_ARGUMENT, "expected a path");
    CHECK_ERR(pt2_open("/nonexistent.pt2", NULL, &archive), PORTA_ERR_IO,
              "pt2 archive /nonexistent.pt2: zip archive /nonexistent.pt2: cannot open");
    CHECK_ERR(pt2_parse("x", 1, NULL, NULL), PORTA_ERR_INVALID_ARGUMENT, "output pointer");
    CHECK(pt2_tensor_count(NULL) == 0 && pt2_tensor_at(NULL, 0) == NULL);
    CHECK(pt2_program(NULL) == NULL && pt2_model_name(NULL) == NULL);
    pt2_close(NULL);
}
