/* safetensors: round trips of every dtype and rank, zero-copy views of the
 * mapped file, metadata, and a corpus of hostile files each rejected with
 * the message that names what was wrong. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/status.h"
#include "runtime/tensor.h"
#include "porta_io.h"
#include "test.h"

/* ---- helpers ---- */

/* A fresh directory for this test's files (removed by end_dir). */
static char *begin_dir(void) {
    const char *base = getenv("TMPDIR");
    char pattern[512];
    snprintf(pattern, sizeof pattern, "%s/porta_st_XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(pattern);
    return dir ? strdup(dir) : NULL;
}

static void end_dir(char *dir) {
    if (!dir) return;
    test_remove_tree(dir);
    free(dir);
}

/* A file image: 8-byte little-endian length, the header as given, then
 * data_bytes of pattern bytes (i & 1, valid for every dtype, bool too). */
static unsigned char *craft(const char *header, size_t header_length, size_t data_bytes,
                            size_t *size) {
    *size = 8 + header_length + data_bytes;
    unsigned char *bytes = malloc(*size ? *size : 1);
    if (!bytes) return NULL;
    for (int i = 0; i < 8; i++) bytes[i] = (unsigned char)((uint64_t)header_length >> (8 * i));
    memcpy(bytes + 8, header, header_length);
    for (size_t i = 0; i < data_bytes; i++) bytes[8 + header_length + i] = (unsigned char)(i & 1);
    return bytes;
}

static porta_status *parse_crafted(const char *header, size_t data_bytes, porta_safetensors **out) {
    size_t size;
    unsigned char *bytes = craft(header, strlen(header), data_bytes, &size);
    if (!bytes) return porta_error(PORTA_ERR_OUT_OF_MEMORY, "test: no memory for the file image");
    porta_status *status = porta_safetensors_parse(bytes, size, out);
    free(bytes);
    return status;
}

static bool write_bytes(const char *path, const void *bytes, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(bytes, 1, size, f) == size;
    return fclose(f) == 0 && ok;
}

static unsigned char *host_bytes(const porta_tensor *t, size_t *bytes) {
    *bytes = (size_t)porta_tensor_numel(t) * porta_dtype_size(porta_tensor_dtype(t));
    unsigned char *data = malloc(*bytes ? *bytes : 1);
    if (!data) return NULL;
    porta_status *status = porta_tensor_to_host(t, data, *bytes);
    if (status) {
        test_fail(__FILE__, __LINE__, "tensor_to_host: %s", porta_status_message(status));
        porta_status_free(status);
        free(data);
        return NULL;
    }
    return data;
}

/* Same dtype, shape and bytes. */
static bool same_tensor(const char *what, const porta_tensor *got, const porta_tensor *want) {
    if (porta_tensor_dtype(got) != porta_tensor_dtype(want) ||
        porta_tensor_rank(got) != porta_tensor_rank(want) ||
        memcmp(porta_tensor_sizes(got), porta_tensor_sizes(want),
               (size_t)porta_tensor_rank(want) * sizeof(int64_t))) {
        test_fail(__FILE__, __LINE__, "%s: dtype or shape differs", what);
        return false;
    }
    size_t n1, n2;
    unsigned char *a = host_bytes(got, &n1), *b = host_bytes(want, &n2);
    bool same = a && b && n1 == n2 && !memcmp(a, b, n1);
    if (!same) test_fail(__FILE__, __LINE__, "%s: contents differ", what);
    free(a);
    free(b);
    return same;
}

/* Whether t is a view of a file's memory rather than a copy. */
static bool is_file_view(const porta_tensor *t) { return porta_tensor_buffer(t)->release != NULL; }

/* ---- round trips ---- */

TEST(test_safetensors_round_trip_every_dtype_and_rank) {
    char *dir = begin_dir();
    CHECK(dir != NULL);
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/all.safetensors", dir);
    static const int64_t shapes[5][4] = {{0}, {5}, {2, 3}, {2, 1, 3}, {2, 2, 1, 3}};
    enum { N = TEST_REAL_DTYPE_COUNT * 5 };
    porta_tensor *tensors[N] = {NULL};
    porta_safetensors_entry entries[N];
    char names[N][32];
    test_rng rng = test_rng_make(7);
    int n = 0;
    for (int d = 0; d < TEST_REAL_DTYPE_COUNT; d++)
        for (int rank = 0; rank <= 4; rank++, n++) {
            snprintf(names[n], sizeof names[n], "%s.rank%d", porta_dtype_name((porta_dtype)d), rank);
            tensors[n] = test_random_tensor(&rng, (porta_dtype)d, rank, shapes[rank], -50, 50);
            entries[n] = (porta_safetensors_entry){names[n], tensors[n]};
        }
    const porta_safetensors_pair metadata[] = {{"format", "pt"}, {"note", "round \"trip\"\n"}};
    porta_status *status = porta_safetensors_save(path, entries, N, metadata, 2);
    CHECK_MSG(!status, "save: %s", porta_status_message(status));
    porta_status_free(status);
    CHECK(test_count_entries(dir) == 1); /* the temporary file was renamed */

    porta_safetensors *file = NULL;
    status = porta_safetensors_open(path, &file);
    CHECK_MSG(!status, "open: %s", porta_status_message(status));
    porta_status_free(status);
    if (file) {
        CHECK(porta_safetensors_count(file) == N);
        size_t previous_size = 8;
        for (int k = 0; k < N; k++) {
            /* Data comes largest element first, so every tensor is aligned. */
            const char *name = porta_safetensors_name(file, k);
            porta_safetensors_info info;
            CHECK_OK(porta_safetensors_info_get(file, name, &info));
            CHECK(porta_dtype_size(info.dtype) <= previous_size);
            previous_size = porta_dtype_size(info.dtype);
            CHECK(info.data_offset % porta_dtype_size(info.dtype) == 0);
        }
        for (int i = 0; i < N; i++) {
            porta_safetensors_info info;
            CHECK_OK(porta_safetensors_info_get(file, names[i], &info));
            CHECK(info.dtype == porta_tensor_dtype(tensors[i]));
            CHECK(info.rank == porta_tensor_rank(tensors[i]));
            porta_tensor *got = NULL;
            CHECK_OK(porta_safetensors_get(file, names[i], test_cpu(), &got));
            same_tensor(names[i], got, tensors[i]);
            CHECK_MSG(is_file_view(got), "%s was copied", names[i]);
            porta_tensor_release(got);
        }
        CHECK(porta_safetensors_name(file, N) == NULL && porta_safetensors_name(file, -1) == NULL);
        CHECK(porta_safetensors_metadata_count(file) == 2);
        CHECK(!strcmp(porta_safetensors_metadata_get(file, "note"), "round \"trip\"\n"));
        CHECK(porta_safetensors_metadata_get(file, "absent") == NULL);
        const char *key, *value;
        CHECK_OK(porta_safetensors_metadata_at(file, 0, &key, &value));
        CHECK(!strcmp(key, "format") && !strcmp(value, "pt"));
        CHECK_ERR(porta_safetensors_metadata_at(file, 2, &key, &value), PORTA_ERR_OUT_OF_RANGE,
                  "expected an index in [0, 2), got 2");
        porta_safetensors_close(file);
    }
    for (int i = 0; i < N; i++) porta_tensor_release(tensors[i]);
    end_dir(dir);
}

TEST(test_safetensors_empty_tensors_and_empty_files) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/empty.safetensors", dir);
    test_rng rng = test_rng_make(3);
    porta_tensor *a = test_empty(PORTA_F32, 1, (int64_t[]){0});
    porta_tensor *b = test_empty(PORTA_I64, 3, (int64_t[]){2, 0, 3});
    porta_tensor *c = test_random_tensor(&rng, PORTA_F16, 1, (int64_t[]){3}, -1, 1);
    porta_safetensors_entry entries[] = {{"a", a}, {"b", b}, {"c", c}};
    CHECK_OK(porta_safetensors_save(path, entries, 3, NULL, 0));
    porta_safetensors *file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK(porta_safetensors_count(file) == 3);
    porta_tensor *got = NULL;
    CHECK_OK(porta_safetensors_get(file, "b", test_cpu(), &got));
    CHECK(porta_tensor_numel(got) == 0 && porta_tensor_rank(got) == 3 &&
          porta_tensor_sizes(got)[2] == 3);
    porta_tensor_release(got);
    got = NULL;
    CHECK_OK(porta_safetensors_get(file, "c", test_cpu(), &got));
    same_tensor("c", got, c);
    porta_tensor_release(got);
    porta_safetensors_close(file);

    /* No tensors, no metadata: the header is "{}" padded. */
    CHECK_OK(porta_safetensors_save(path, NULL, 0, NULL, 0));
    file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK(porta_safetensors_count(file) == 0 && porta_safetensors_metadata_count(file) == 0);
    porta_safetensors_close(file);
    /* Only metadata. */
    CHECK_OK(porta_safetensors_save(path, NULL, 0, &(porta_safetensors_pair){"k", "v"}, 1));
    file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK(!strcmp(porta_safetensors_metadata_get(file, "k"), "v"));
    porta_safetensors_close(file);
    porta_tensor_release(a);
    porta_tensor_release(b);
    porta_tensor_release(c);
    end_dir(dir);
}

TEST(test_safetensors_strided_tensors_are_written_row_major) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/t.safetensors", dir);
    porta_tensor *x = NULL, *xt = NULL, *packed = NULL, *got = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 12, 1, &x));
    porta_tensor *m = NULL;
    CHECK_OK(porta_reshape(x, 2, (int64_t[]){3, 4}, &m));
    CHECK_OK(porta_permute(m, (int[]){1, 0}, &xt));
    CHECK(!porta_tensor_is_contiguous(xt));
    CHECK_OK(porta_safetensors_save(path, &(porta_safetensors_entry){"xt", xt}, 1, NULL, 0));
    porta_safetensors *file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK_OK(porta_safetensors_get(file, "xt", test_cpu(), &got));
    CHECK_OK(porta_cast(xt, PORTA_F32, &packed));
    CHECK(porta_tensor_sizes(got)[0] == 4 && porta_tensor_sizes(got)[1] == 3);
    same_tensor("xt", got, packed);
    porta_safetensors_close(file);
    porta_tensor *held[] = {x, m, xt, packed, got};
    for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) porta_tensor_release(held[i]);
    end_dir(dir);
}

/* ---- zero copy ---- */

TEST(test_safetensors_cpu_tensors_are_views_of_the_mapping) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/v.safetensors", dir);
    porta_tensor *w = NULL;
    CHECK_OK(porta_tensor_arange(test_cpu(), PORTA_F32, 0, 1000, 1, &w));
    CHECK_OK(porta_safetensors_save(path, &(porta_safetensors_entry){"w", w}, 1, NULL, 0));
    porta_safetensors *file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    uint64_t before = porta_memory_allocated();
    porta_tensor *view = NULL;
    CHECK_OK(porta_safetensors_get(file, "w", test_cpu(), &view));
    CHECK(is_file_view(view));
    CHECK(porta_memory_allocated() == before); /* nothing was copied */
    /* The view outlives the handle: it holds the mapping. */
    porta_safetensors_close(file);
    same_tensor("w after close", view, w);
    /* Writing to the view changes the private pages, never the file. */
    CHECK_OK(porta_fill(view, 5.0));
    float *filled = malloc(1000 * sizeof *filled);
    if (filled) {
        CHECK_OK(porta_tensor_to_host(view, filled, 1000 * sizeof *filled));
        CHECK(filled[0] == 5.0f && filled[999] == 5.0f);
        free(filled);
    }
    porta_tensor_release(view);
    file = NULL;
    view = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK_OK(porta_safetensors_get(file, "w", test_cpu(), &view));
    same_tensor("w reopened", view, w);
    porta_tensor_release(view);
    porta_safetensors_close(file);
    porta_tensor_release(w);
    end_dir(dir);
}

TEST(test_safetensors_unaligned_data_is_copied) {
    /* A one-byte tensor first puts the F32 tensor's data at an odd address. */
    const char *header = "{\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                         "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[1,9]}}";
    size_t size;
    unsigned char *bytes = craft(header, strlen(header), 9, &size);
    if (!bytes) return;
    const float values[2] = {1.5f, -2.25f};
    memcpy(bytes + 8 + strlen(header) + 1, values, sizeof values);
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_parse(bytes, size, &file);
    free(bytes);
    CHECK_OK(status);
    porta_tensor *f = NULL, *b = NULL;
    CHECK_OK(porta_safetensors_get(file, "f", test_cpu(), &f));
    CHECK_OK(porta_safetensors_get(file, "b", test_cpu(), &b));
    porta_safetensors_close(file);
    CHECK(!is_file_view(f) && is_file_view(b));
    float got[2] = {0};
    CHECK_OK(porta_tensor_to_host(f, got, sizeof got));
    CHECK(got[0] == 1.5f && got[1] == -2.25f);
    porta_tensor_release(f);
    porta_tensor_release(b);
}

/* ---- hostile files ---- */

typedef struct bad_header {
    const char *what;
    const char *header;
    size_t data_bytes;
    porta_code code;
    const char *message;
} bad_header;

#define T(name, fields) "\"" name "\":{" fields "}"
#define U8_4(begin, end) "\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[" #begin "," #end "]"

static const bad_header bad_headers[] = {
    {"overlapping offsets", "{" T("a", U8_4(0, 4)) "," T("b", U8_4(2, 6)) "}", 6,
     PORTA_ERR_INVALID_ARGUMENT,
     "tensor \"b\": expected its data to begin at byte 4 where \"a\" ends, got 2 (an overlap of 2 bytes)"},
    {"gap between offsets", "{" T("a", U8_4(0, 4)) "," T("b", U8_4(6, 10)) "}", 10,
     PORTA_ERR_INVALID_ARGUMENT, "got 6 (a gap of 2 bytes)"},
    {"first tensor not at 0", "{" T("a", U8_4(2, 6)) "}", 6, PORTA_ERR_INVALID_ARGUMENT,
     "tensor \"a\": expected the first data to begin at byte 0, got 2 (a gap of 2 bytes)"},
    {"offsets past the end", "{" T("a", U8_4(0, 4)) "}", 2, PORTA_ERR_OUT_OF_RANGE,
     "tensor \"a\": expected data_offsets within the 2-byte data section, got [0, 4]"},
    {"data not covered", "{" T("a", U8_4(0, 4)) "}", 8, PORTA_ERR_INVALID_ARGUMENT,
     "expected the tensors to cover the 8-byte data section exactly, got 4 bytes covered (4 "
     "bytes left over)"},
    {"huge shape", "{" T("a", "\"dtype\":\"F32\",\"shape\":[1000000000000],\"data_offsets\":[0,4000000000000]") "}",
     4, PORTA_ERR_OUT_OF_RANGE, "within the 4-byte data section, got [0, 4000000000000]"},
    {"overflowing product",
     "{" T("a", "\"dtype\":\"F64\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]") "}", 8,
     PORTA_ERR_INVALID_ARGUMENT,
     "expected a shape whose byte size fits in 63 bits, got [4294967296, 4294967296] of F64"},
    {"product overflowing int64 only by the dtype size",
     "{" T("a", "\"dtype\":\"I16\",\"shape\":[4611686018427387904],\"data_offsets\":[0,2]") "}", 2,
     PORTA_ERR_INVALID_ARGUMENT, "the product overflows"},
    {"dimension past int64", "{" T("a", "\"dtype\":\"U8\",\"shape\":[18446744073709551616],\"data_offsets\":[0,0]") "}",
     0, PORTA_ERR_INVALID_ARGUMENT,
     "expected a non-negative integer in \"shape\", got 1.8446744073709552e+19 (not an integer within int64)"},
    {"negative dimension", "{" T("a", "\"dtype\":\"U8\",\"shape\":[2,-3],\"data_offsets\":[0,6]") "}", 6,
     PORTA_ERR_INVALID_ARGUMENT, "tensor \"a\": expected a non-negative integer in \"shape\", got -3"},
    {"fractional dimension", "{" T("a", "\"dtype\":\"U8\",\"shape\":[2.5],\"data_offsets\":[0,2]") "}", 2,
     PORTA_ERR_INVALID_ARGUMENT, "got 2.5 (not an integer within int64)"},
    {"string dimension", "{" T("a", "\"dtype\":\"U8\",\"shape\":[\"2\"],\"data_offsets\":[0,2]") "}", 2,
     PORTA_ERR_INVALID_ARGUMENT, "expected a non-negative integer in \"shape\", got a string"},
    {"negative offset", "{" T("a", "\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[-1,-1]") "}", 0,
     PORTA_ERR_INVALID_ARGUMENT, "expected a non-negative integer in \"data_offsets\", got -1"},
    {"end before begin", "{" T("a", "\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]") "}", 4,
     PORTA_ERR_INVALID_ARGUMENT, "expected data_offsets begin <= end, got [4, 0]"},
    {"offsets not a pair", "{" T("a", "\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[0]") "}", 0,
     PORTA_ERR_INVALID_ARGUMENT, "expected \"data_offsets\" to be [begin, end], got an array of 1"},
    {"unknown dtype", "{" T("a", "\"dtype\":\"F8_E4M3\",\"shape\":[1],\"data_offsets\":[0,1]") "}", 1,
     PORTA_ERR_DTYPE,
     "tensor \"a\": expected a dtype among BOOL U8 I8 I16 I32 I64 F16 BF16 F32 F64 C64, got \"F8_E4M3\""},
    {"lowercase dtype", "{" T("a", "\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]") "}", 4,
     PORTA_ERR_DTYPE, "got \"f32\""},
    {"dtype not a string", "{" T("a", "\"dtype\":5,\"shape\":[1],\"data_offsets\":[0,4]") "}", 4,
     PORTA_ERR_INVALID_ARGUMENT, "expected \"dtype\" to be a string, got a number"},
    {"size mismatch", "{" T("a", "\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]") "}", 4,
     PORTA_ERR_INVALID_ARGUMENT,
     "tensor \"a\": expected 8 bytes for shape [2] of F32, got data_offsets [0, 4] of 4 bytes"},
    {"rank over 16", "{" T("a", "\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]") "}",
     1, PORTA_ERR_INVALID_ARGUMENT, "expected at most 16 dimensions, got 17"},
    {"missing field", "{" T("a", "\"shape\":[1],\"data_offsets\":[0,1]") "}", 1,
     PORTA_ERR_INVALID_ARGUMENT, "tensor \"a\": expected the field \"dtype\", got none"},
    {"unknown field", "{" T("a", U8_4(0, 4) ",\"extra\":1") "}", 4, PORTA_ERR_INVALID_ARGUMENT,
     "expected only the fields dtype, shape and data_offsets, got \"extra\""},
    {"tensor not an object", "{\"a\":[1,2]}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "tensor \"a\": expected an object with dtype, shape and data_offsets, got an array"},
    {"duplicate names", "{" T("a", U8_4(0, 4)) "," T("a", U8_4(4, 8)) "}", 8,
     PORTA_ERR_INVALID_ARGUMENT, "expected unique keys in the object, got \"a\" twice"},
    {"duplicate names spelled differently", "{" T("a", U8_4(0, 4)) "," T("\\u0061", U8_4(4, 8)) "}", 8,
     PORTA_ERR_INVALID_ARGUMENT, "got \"a\" twice"},
    {"name with NUL", "{" T("a\\u0000b", U8_4(0, 4)) "}", 4, PORTA_ERR_INVALID_ARGUMENT,
     "tensor \"a\\x00b\": expected a name without NUL characters, got one"},
    {"metadata not an object", "{\"__metadata__\":[\"a\"]}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "expected \"__metadata__\" to be an object of strings, got an array"},
    {"metadata value not a string", "{\"__metadata__\":{\"epoch\":3}}", 0,
     PORTA_ERR_INVALID_ARGUMENT, "\"__metadata__\" entry \"epoch\": expected a string value, got a number"},
    {"metadata nested too deep", "{\"__metadata__\":{\"k\":[[[[[[[[[]]]]]]]]]}}", 0,
     PORTA_ERR_INVALID_ARGUMENT, "expected arrays and objects nested at most 8 deep"},
    {"header an array", "[1,2]", 0, PORTA_ERR_INVALID_ARGUMENT,
     "expected the header to start with '{', got '['"},
    {"header after whitespace", " {}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "expected the header to start with '{', got byte 0x20"},
    {"empty header", "", 0, PORTA_ERR_INVALID_ARGUMENT,
     "header: JSON at byte 0: expected a value, got the end of the text"},
    {"bad JSON", "{\"a\": }", 0, PORTA_ERR_INVALID_ARGUMENT,
     "header: JSON at byte 6: expected a value (object, array, string, number, true, false, null), got '}'"},
    {"trailing comma", "{\"__metadata__\":{},}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "JSON at byte 19: expected '\"' to start an object key, got '}'"},
    {"unterminated string", "{\"a", 0, PORTA_ERR_INVALID_ARGUMENT,
     "expected '\"' to close the string, got the end of the text"},
    {"trailing text", "{} x", 0, PORTA_ERR_INVALID_ARGUMENT,
     "JSON at byte 3: expected the end of the text after the value, got 'x'"},
    {"invalid UTF-8 (overlong)", "{\"\xC0\x80\":1}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "JSON at byte 2: expected valid UTF-8 in the string, got byte 0xC0"},
    {"invalid UTF-8 (encoded surrogate)", "{\"\xED\xA0\x80\":1}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "expected valid UTF-8 in the string, got byte 0xED"},
    {"invalid UTF-8 (truncated)", "{\"__metadata__\":{\"k\":\"\xE2\x82\"}}", 0,
     PORTA_ERR_INVALID_ARGUMENT, "expected valid UTF-8 in the string, got byte 0xE2"},
    {"unpaired surrogate escape", "{\"__metadata__\":{\"k\":\"\\ud800x\"}}", 0,
     PORTA_ERR_INVALID_ARGUMENT,
     "expected a low surrogate escape after the high surrogate \\uD800, got none"},
    {"raw control character", "{\"__metadata__\":{\"k\":\"a\tb\"}}", 0, PORTA_ERR_INVALID_ARGUMENT,
     "control characters must be escaped"},
};

TEST(test_safetensors_rejects_each_bad_header) {
    for (size_t i = 0; i < sizeof bad_headers / sizeof bad_headers[0]; i++) {
        const bad_header *b = &bad_headers[i];
        porta_safetensors *file = NULL;
        porta_status *status = parse_crafted(b->header, b->data_bytes, &file);
        CHECK_MSG(status != NULL, "%s: accepted", b->what);
        if (!status) {
            porta_safetensors_close(file);
            continue;
        }
        CHECK_MSG(file == NULL, "%s: output set on error", b->what);
        CHECK_MSG(porta_status_code(status) == b->code, "%s: code %s, expected %s", b->what,
                  porta_code_name(porta_status_code(status)), porta_code_name(b->code));
        CHECK_MSG(strstr(porta_status_message(status), b->message) != NULL,
                  "%s: message \"%s\" lacks \"%s\"", b->what, porta_status_message(status),
                  b->message);
        CHECK_MSG(!strncmp(porta_status_message(status), "safetensors: ", 13),
                  "%s: message \"%s\" does not name the format", b->what,
                  porta_status_message(status));
        porta_status_free(status);
    }
}

TEST(test_safetensors_accepts_the_edges_of_the_format) {
    /* Padding after the JSON, members in any order, empty tensors sharing
     * an offset, and a header exactly at the end of the file. */
    const char *ok[] = {
        "{}        ",
        "{" T("e", "\"data_offsets\":[4,4],\"shape\":[0,7],\"dtype\":\"F64\"") "," T("a", U8_4(0, 4))
        "," T("z", "\"dtype\":\"BOOL\",\"shape\":[0],\"data_offsets\":[4,4]") "}",
        "{\"__metadata__\":{}," T("s", "\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[0,8]") "}",
    };
    const size_t data[] = {0, 4, 8};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        porta_safetensors *file = NULL;
        porta_status *status = parse_crafted(ok[i], data[i], &file);
        CHECK_MSG(!status, "case %zu: %s", i, porta_status_message(status));
        porta_status_free(status);
        porta_safetensors_close(file);
    }
    porta_safetensors *file = NULL;
    CHECK_OK(parse_crafted(ok[1], 4, &file));
    CHECK(!strcmp(porta_safetensors_name(file, 0), "a")); /* data order, then header order */
    CHECK(!strcmp(porta_safetensors_name(file, 1), "e"));
    CHECK(!strcmp(porta_safetensors_name(file, 2), "z"));
    porta_safetensors_info info;
    CHECK_OK(porta_safetensors_info_get(file, "e", &info));
    CHECK(info.rank == 2 && info.sizes[1] == 7 && info.bytes == 0 && info.dtype == PORTA_F64);
    porta_safetensors_close(file);
}

TEST(test_safetensors_rejects_bad_bool_bytes_when_read) {
    const char *header = "{" T("m", "\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[0,3]") "}";
    size_t size;
    unsigned char *bytes = craft(header, strlen(header), 3, &size);
    if (!bytes) return;
    bytes[size - 1] = 7;
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_parse(bytes, size, &file);
    free(bytes);
    CHECK_OK(status);
    porta_tensor *m = NULL;
    CHECK_ERR(porta_safetensors_get(file, "m", test_cpu(), &m), PORTA_ERR_INVALID_ARGUMENT,
              "tensor \"m\": expected BOOL elements of 0 or 1, got 7 at element 2");
    CHECK(m == NULL);
    porta_safetensors_close(file);
}

/* Damage at the byte level: lengths, truncation, the header cap. */
TEST(test_safetensors_rejects_bad_lengths_and_truncation) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/bad.safetensors", dir);
    const char *header = "{" T("a", U8_4(0, 4)) "}";
    size_t size;
    unsigned char *good = craft(header, strlen(header), 4, &size);
    if (!good) {
        end_dir(dir);
        return;
    }
    const struct {
        const char *what;
        size_t keep;      /* bytes of the good file kept */
        uint64_t length;  /* header length written over it (0: keep) */
        porta_code code;
        const char *message;
    } cases[] = {
        {"no bytes", 0, 0, PORTA_ERR_INVALID_ARGUMENT, "expected at least 8 bytes (the header length), got a 0-byte file"},
        {"truncated length", 5, 0, PORTA_ERR_INVALID_ARGUMENT, "got a 5-byte file"},
        {"truncated header", 20, 0, PORTA_ERR_OUT_OF_RANGE,
         "expected a header length within the file's 12 bytes after the length, got 53"},
        {"truncated data", size - 1, 0, PORTA_ERR_OUT_OF_RANGE, "within the 3-byte data section"},
        {"length past the end", size, 1000, PORTA_ERR_OUT_OF_RANGE,
         "got 1000 (past the end of the file)"},
        {"length over the cap", size, 100000001, PORTA_ERR_INVALID_ARGUMENT,
         "expected a header length of at most 100000000 bytes, got 100000001"},
        {"length near 2^64", size, UINT64_MAX - 3, PORTA_ERR_INVALID_ARGUMENT,
         "got 18446744073709551612"},
        {"shorter length", size, 52, PORTA_ERR_INVALID_ARGUMENT, "expected ',' or '}' in the object, got the end of the text"},
    };
    CHECK(strlen(header) == 53); /* the numbers above */
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        unsigned char copy[256];
        memcpy(copy, good, size);
        if (cases[i].length)
            for (int k = 0; k < 8; k++) copy[k] = (unsigned char)(cases[i].length >> (8 * k));
        porta_safetensors *file = NULL;
        /* From memory and from a file, with the file's name in the message. */
        porta_status *status = porta_safetensors_parse(copy, cases[i].keep, &file);
        CHECK_MSG(status && porta_status_code(status) == cases[i].code &&
                      strstr(porta_status_message(status), cases[i].message),
                  "%s (memory): %s", cases[i].what, status ? porta_status_message(status) : "accepted");
        porta_status_free(status);
        CHECK(write_bytes(path, copy, cases[i].keep));
        status = porta_safetensors_open(path, &file);
        CHECK_MSG(status && porta_status_code(status) == cases[i].code &&
                      strstr(porta_status_message(status), cases[i].message) &&
                      strstr(porta_status_message(status), path),
                  "%s (file): %s", cases[i].what, status ? porta_status_message(status) : "accepted");
        porta_status_free(status);
        CHECK(file == NULL);
    }
    free(good);
    porta_safetensors *file = NULL;
    CHECK_ERR(porta_safetensors_open(dir, &file), PORTA_ERR_IO, "expected a regular file");
    snprintf(path, sizeof path, "%s/absent.safetensors", dir);
    CHECK_ERR(porta_safetensors_open(path, &file), PORTA_ERR_IO, "cannot open");
    end_dir(dir);
}

/* ---- misuse of the API ---- */

TEST(test_safetensors_argument_errors) {
    porta_safetensors *file = NULL;
    CHECK_ERR(porta_safetensors_open(NULL, &file), PORTA_ERR_INVALID_ARGUMENT, "got NULL");
    CHECK_ERR(porta_safetensors_parse(NULL, 8, &file), PORTA_ERR_INVALID_ARGUMENT, "got NULL");
    CHECK_OK(parse_crafted("{" T("a", U8_4(0, 4)) "}", 4, &file));
    porta_tensor *t = NULL;
    CHECK_ERR(porta_safetensors_get(file, "b", test_cpu(), &t), PORTA_ERR_OUT_OF_RANGE,
              "expected the name of one of the file's 1 tensors, got \"b\"");
    CHECK_ERR(porta_safetensors_get(file, "a", NULL, &t), PORTA_ERR_INVALID_ARGUMENT,
              "expected a device");
    porta_safetensors_info info;
    CHECK_ERR(porta_safetensors_info_get(file, NULL, &info), PORTA_ERR_INVALID_ARGUMENT, "got NULL");
    porta_safetensors_close(file);
    porta_safetensors_close(NULL);
    CHECK(porta_safetensors_count(NULL) == 0);
}

TEST(test_safetensors_save_rejects_bad_names_and_leaves_no_file) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    porta_tensor *t = test_empty(PORTA_F32, 1, (int64_t[]){2});
    porta_safetensors_entry twice[] = {{"w", t}, {"v", t}, {"w", t}};
    CHECK_ERR(porta_safetensors_save(path, twice, 3, NULL, 0), PORTA_ERR_INVALID_ARGUMENT,
              "expected unique tensor names, got \"w\" twice");
    CHECK_ERR(porta_safetensors_save(path, &(porta_safetensors_entry){"__metadata__", t}, 1, NULL, 0),
              PORTA_ERR_INVALID_ARGUMENT, "other than \"__metadata__\"");
    CHECK_ERR(porta_safetensors_save(path, &(porta_safetensors_entry){"bad\xFF", t}, 1, NULL, 0),
              PORTA_ERR_INVALID_ARGUMENT, "expected valid UTF-8 in a tensor name, got \"bad\\xFF\" (bad byte at 3)");
    CHECK_ERR(porta_safetensors_save(path, &(porta_safetensors_entry){"x", NULL}, 1, NULL, 0),
              PORTA_ERR_INVALID_ARGUMENT, "expected a tensor for name 0, got NULL");
    porta_safetensors_pair keys[] = {{"k", "1"}, {"k", "2"}};
    CHECK_ERR(porta_safetensors_save(path, NULL, 0, keys, 2), PORTA_ERR_INVALID_ARGUMENT,
              "expected unique metadata keys, got \"k\" twice");
    CHECK_ERR(porta_safetensors_save(path, NULL, 0, &(porta_safetensors_pair){"k", NULL}, 1),
              PORTA_ERR_INVALID_ARGUMENT, "expected a string for a metadata value, got NULL");
    CHECK(test_count_entries(dir) == 0);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/no/such/dir/x.safetensors", dir);
    CHECK_ERR(porta_safetensors_save(missing, &(porta_safetensors_entry){"w", t}, 1, NULL, 0),
              PORTA_ERR_IO, "cannot create");
    /* A failure after the temporary file exists removes it again: the
     * staging copy is refused by the memory limit. */
    porta_tensor *big = test_empty(PORTA_F32, 1, (int64_t[]){1 << 16});
    uint64_t old = porta_set_memory_limit(porta_memory_allocated() + 1024);
    CHECK_ERR(porta_safetensors_save(path, &(porta_safetensors_entry){"big", big}, 1, NULL, 0),
              PORTA_ERR_OUT_OF_MEMORY, NULL);
    porta_set_memory_limit(old);
    CHECK(test_count_entries(dir) == 0);
    porta_tensor_release(big);
    porta_tensor_release(t);
    end_dir(dir);
}

TEST(test_safetensors_parse_fails_cleanly_over_the_memory_limit) {
    size_t size;
    const char *header = "{" T("a", U8_4(0, 4)) "}";
    unsigned char *bytes = craft(header, strlen(header), 4, &size);
    if (!bytes) return;
    uint64_t old = porta_set_memory_limit(porta_memory_allocated() + 16);
    porta_safetensors *file = NULL;
    CHECK_ERR(porta_safetensors_parse(bytes, size, &file), PORTA_ERR_OUT_OF_MEMORY, "safetensors bytes");
    porta_set_memory_limit(old);
    CHECK(file == NULL);
    free(bytes);
}

TEST(test_safetensors_names_and_metadata_with_escapes_round_trip) {
    char *dir = begin_dir();
    if (!dir) return;
    char path[600];
    snprintf(path, sizeof path, "%s/names.safetensors", dir);
    const char *names[] = {"quote\"back\\slash", "tab\tnew\nline\x01", "caf\xC3\xA9 \xE2\x98\x83 \xF0\x9F\x98\x80", ""};
    porta_tensor *t = test_empty(PORTA_I32, 1, (int64_t[]){0});
    porta_safetensors_entry entries[4];
    for (int i = 0; i < 4; i++) entries[i] = (porta_safetensors_entry){names[i], t};
    const porta_safetensors_pair metadata[] = {{"\x7f key\"", "line\nfeed \\ \xC3\xA9"}};
    CHECK_OK(porta_safetensors_save(path, entries, 4, metadata, 1));
    porta_safetensors *file = NULL;
    CHECK_OK(porta_safetensors_open(path, &file));
    CHECK(porta_safetensors_count(file) == 4);
    for (int i = 0; i < 4; i++) {
        CHECK_MSG(!strcmp(porta_safetensors_name(file, i), names[i]), "name %d", i);
        porta_safetensors_info info;
        CHECK_OK(porta_safetensors_info_get(file, names[i], &info));
    }
    CHECK(!strcmp(porta_safetensors_metadata_get(file, "\x7f key\""), "line\nfeed \\ \xC3\xA9"));
    porta_safetensors_close(file);
    porta_tensor_release(t);
    end_dir(dir);
}

/* A view of the file read by recorded (fused) ops after the caller has let
 * go of both the view and the file: the trace's references keep the
 * mapping, and the memory plan must not try to give its memory back. */
TEST(test_safetensors_views_in_a_fused_trace) {
    const char *header = "{" T("w", "\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]") "}";
    size_t size;
    unsigned char *bytes = craft(header, strlen(header), 16, &size);
    if (!bytes) return;
    const float w[4] = {1, 2, 3, 4};
    memcpy(bytes + size - 16, w, sizeof w);
    porta_safetensors *file = NULL;
    porta_status *status = porta_safetensors_parse(bytes, size, &file);
    free(bytes);
    CHECK_OK(status);
    porta_tensor *view = NULL, *twice = NULL, *sum = NULL;
    CHECK_OK(porta_safetensors_get(file, "w", test_cpu(), &view));
    porta_safetensors_close(file);
    CHECK_OK(porta_set_fusion(true));
    status = porta_binary(PORTA_ADD, view, view, &twice);
    if (!status) status = porta_binary(PORTA_MUL, twice, twice, &sum);
    porta_tensor_release(view);
    porta_tensor_release(twice);
    porta_status *off = porta_set_fusion(false); /* flushes */
    CHECK_OK(status);
    CHECK_OK(off);
    float got[4] = {0};
    CHECK_OK(porta_tensor_to_host(sum, got, sizeof got));
    CHECK(got[0] == 4 && got[1] == 16 && got[2] == 36 && got[3] == 64);
    porta_tensor_release(sum);
}
