/* The JSON parser and UTF-8 checks under the safetensors reader: what they
 * accept, the tree they build, and the message for each kind of bad text. */
#include <string.h>

#include "io/json.h"
#include "io/utf8.h"
#include "test.h"

static json_document *parse_ok(const char *text, int depth) {
    json_document *document = NULL;
    porta_status *status = json_parse(text, strlen(text), depth, &document);
    CHECK_MSG(!status, "%s: %s", text, porta_status_message(status));
    porta_status_free(status);
    return document;
}

TEST(test_json_builds_the_tree) {
    json_document *d = parse_ok(" {\"a\" : [1, -2, 3.5e-1, true, false, null, \"s\"],\n"
                                "  \"b\": {\"c\": {}}, \"e\": []} ",
                                8);
    if (!d) return;
    const json_value *root = json_document_root(d);
    CHECK(root->type == JSON_OBJECT && root->as.object.count == 3);
    CHECK(!strcmp(root->as.object.members[1].key, "b")); /* document order */
    const json_value *a = json_object_get(root, "a");
    CHECK(a && a->type == JSON_ARRAY && a->as.array.count == 7);
    if (a && a->as.array.count == 7) {
        const json_value *const *x = a->as.array.items;
        CHECK(x[0]->as.number.is_integer && x[0]->as.number.integer == 1);
        CHECK(x[1]->as.number.is_integer && x[1]->as.number.integer == -2);
        CHECK(!x[2]->as.number.is_integer && x[2]->as.number.value == 0.35);
        CHECK(x[3]->type == JSON_TRUE && x[4]->type == JSON_FALSE && x[5]->type == JSON_NULL);
        CHECK(x[6]->type == JSON_STRING && !strcmp(x[6]->as.string.chars, "s"));
        CHECK(x[6]->offset == 43); /* where the value starts, for messages */
    }
    const json_value *c = json_object_get(json_object_get(root, "b"), "c");
    CHECK(c && c->type == JSON_OBJECT && c->as.object.count == 0);
    CHECK(json_object_get(root, "missing") == NULL && json_object_get(a, "a") == NULL);
    json_document_free(d);
}

TEST(test_json_decodes_escapes_and_utf8) {
    json_document *d = parse_ok("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u2603 \\ud83d\\ude00 "
                                "\xc3\xa9 \\u0000!\"",
                                1);
    if (!d) return;
    const json_value *s = json_document_root(d);
    const char want[] = "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x98\x83 \xf0\x9f\x98\x80 \xc3\xa9 \0!";
    CHECK(s->type == JSON_STRING && s->as.string.length == sizeof want - 1);
    CHECK(!memcmp(s->as.string.chars, want, sizeof want));
    json_document_free(d);
}

TEST(test_json_integers_at_the_int64_bounds) {
    json_document *d =
        parse_ok("[9223372036854775807, -9223372036854775808, 9223372036854775808, -0, 1e2]", 2);
    if (!d) return;
    const json_value *const *x = json_document_root(d)->as.array.items;
    CHECK(x[0]->as.number.is_integer && x[0]->as.number.integer == INT64_MAX);
    CHECK(x[1]->as.number.is_integer && x[1]->as.number.integer == INT64_MIN);
    CHECK(!x[2]->as.number.is_integer && x[2]->as.number.value == 9223372036854775808.0);
    CHECK(x[3]->as.number.is_integer && x[3]->as.number.integer == 0);
    CHECK(!x[4]->as.number.is_integer && x[4]->as.number.value == 100.0);
    json_document_free(d);
}

TEST(test_json_depth_limit_is_exact) {
    json_document *d = parse_ok("[[[{}]]]", 4);
    json_document_free(d);
    d = NULL;
    CHECK_ERR(json_parse("[[[{}]]]", 8, 3, &d), PORTA_ERR_INVALID_ARGUMENT,
              "JSON at byte 3: expected arrays and objects nested at most 3 deep, got deeper");
    CHECK(d == NULL);
    /* Deep input fails fast instead of recursing without bound. */
    static char deep[200001];
    memset(deep, '[', sizeof deep - 1);
    CHECK_ERR(json_parse(deep, sizeof deep - 1, 64, &d), PORTA_ERR_INVALID_ARGUMENT,
              "nested at most 64 deep");
}

TEST(test_json_rejects_bad_text_with_a_message) {
    const struct {
        const char *text;
        const char *message;
    } cases[] = {
        {"", "JSON at byte 0: expected a value, got the end of the text"},
        {"   ", "JSON at byte 3: expected a value, got the end of the text"},
        {"[1,]", "JSON at byte 3: expected a value (object, array, string, number, true, false, null), got ']'"},
        {"[1 2]", "JSON at byte 3: expected ',' or ']' in the array, got '2'"},
        {"{\"a\" 1}", "JSON at byte 5: expected ':' after the object key, got '1'"},
        {"{a:1}", "JSON at byte 1: expected '\"' to start an object key, got 'a'"},
        {"{\"a\":1 \"b\":2}", "expected ',' or '}' in the object, got '\"'"},
        {"01", "JSON at byte 1: expected no leading zero"},
        {"-", "JSON at byte 1: expected a digit, got the end of the text"},
        {"1.", "expected a digit after the decimal point"},
        {"1e+", "expected a digit in the exponent"},
        {".5", "JSON at byte 0: expected a value"},
        {"+1", "JSON at byte 0: expected a value"},
        {"1e999", "expected a number within double range, got 1e999"},
        {"tru", "JSON at byte 0: expected a value (true, false or null), got 't'"},
        {"nul", "expected a value (true, false or null)"},
        {"NaN", "JSON at byte 0: expected a value"},
        {"\"abc", "JSON at byte 4: expected '\"' to close the string, got the end of the text"},
        {"\"a\nb\"", "JSON at byte 2: expected a string character (control characters must be escaped), got byte 0x0A"},
        {"\"\\x\"", "JSON at byte 2: expected one of \" \\ / b f n r t u after '\\', got 'x'"},
        {"\"\\u12G4\"", "expected four hex digits after \\u, got 'G'"},
        {"\"\\udc00\"", "JSON at byte 1: expected a code point or a high surrogate in \\u escape, got the unpaired low surrogate \\uDC00"},
        {"\"\\ud800\\u0041\"", "expected a low surrogate escape after the high surrogate \\uD800, got \\u0041"},
        {"\"\\ud800\"", "after the high surrogate \\uD800"},
        {"\"\x80\"", "JSON at byte 1: expected valid UTF-8 in the string, got byte 0x80"},
        {"\"\xC1\xBF\"", "got byte 0xC1"},               /* overlong 2-byte */
        {"\"\xE0\x9F\xBF\"", "got byte 0xE0"},           /* overlong 3-byte */
        {"\"\xF0\x8F\xBF\xBF\"", "got byte 0xF0"},       /* overlong 4-byte */
        {"\"\xF4\x90\x80\x80\"", "got byte 0xF4"},       /* past U+10FFFF */
        {"\"\xF5\x80\x80\x80\"", "got byte 0xF5"},
        {"\"\xED\xBF\xBF\"", "got byte 0xED"},           /* a surrogate */
        {"\"\xE2\x28\xA1\"", "got byte 0xE2"},           /* bad continuation */
        {"\xEF\xBB\xBF{}", "JSON at byte 0: expected a value"}, /* no byte-order mark */
        {"{} {}", "JSON at byte 3: expected the end of the text after the value, got '{'"},
        {"{\"k\":1,\"k\":2}", "JSON at byte 0: expected unique keys in the object, got \"k\" twice"},
        {"[{\"x\":1,\"b\":1,\"c\":1,\"d\":1,\"e\":1,\"f\":1,\"g\":1,\"h\":1,\"i\":1,\"b\":0}]",
         "JSON at byte 1: expected unique keys in the object, got \"b\" twice"},
        {"{\"a\\u0000\":1,\"a\":2,\"a\\u0000\":3}", "got \"a\\x00\" twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_document *d = NULL;
        porta_status *status = json_parse(cases[i].text, strlen(cases[i].text), 8, &d);
        CHECK_MSG(status && porta_status_code(status) == PORTA_ERR_INVALID_ARGUMENT &&
                      strstr(porta_status_message(status), cases[i].message),
                  "case %zu: got \"%s\", expected \"%s\"", i,
                  status ? porta_status_message(status) : "success", cases[i].message);
        CHECK(d == NULL);
        porta_status_free(status);
        json_document_free(d);
    }
    /* Keys differing only after an embedded NUL are different keys. */
    json_document *d = parse_ok("{\"a\\u0000x\":1,\"a\\u0000y\":2,\"a\":3}", 2);
    json_document_free(d);
}

TEST(test_json_many_members_are_checked_for_duplicates) {
    enum { N = 3000 };
    static char text[N * 16];
    size_t used = 0;
    text[used++] = '{';
    for (int i = 0; i < N; i++)
        used += (size_t)snprintf(text + used, sizeof text - used, "%s\"k%d\":%d", i ? "," : "",
                                 i, i);
    text[used++] = '}';
    json_document *d = NULL;
    CHECK_OK(json_parse(text, used, 2, &d));
    CHECK(json_document_root(d)->as.object.count == N);
    json_document_free(d);
    /* The same with one key repeated far from its first use. */
    memcpy(strstr(text, "\"k2999\""), "\"k1000\"", 7);
    d = NULL;
    CHECK_ERR(json_parse(text, used, 2, &d), PORTA_ERR_INVALID_ARGUMENT, "got \"k1000\" twice");
}

TEST(test_utf8_sequences) {
    const struct {
        const char *bytes;
        size_t available;
        int length;
    } cases[] = {
        {"A", 1, 1},          {"\xC2\x80", 2, 2},         {"\xDF\xBF", 2, 2},
        {"\xE0\xA0\x80", 3, 3}, {"\xED\x9F\xBF", 3, 3},   {"\xEE\x80\x80", 3, 3},
        {"\xF0\x90\x80\x80", 4, 4}, {"\xF4\x8F\xBF\xBF", 4, 4},
        {"\xC2\x80", 1, 0},   {"\xC0\x80", 2, 0},         {"\xE0\x80\x80", 3, 0},
        {"\xED\xA0\x80", 3, 0}, {"\xF4\x90\x80\x80", 4, 0}, {"\x80", 1, 0},
        {"\xFF", 1, 0},       {"\xF0\x90\x80", 3, 0},     {"\xE2\x82\x41", 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_MSG(utf8_sequence_length((const unsigned char *)cases[i].bytes, cases[i].available) ==
                      cases[i].length,
                  "case %zu", i);
    size_t bad = 0;
    CHECK(utf8_is_valid("ok \xE2\x98\x83", 6, NULL));
    CHECK(!utf8_is_valid("ok \xE2\x98", 5, &bad) && bad == 3);
    char out[4];
    const uint32_t points[] = {0x41, 0x7FF, 0x800, 0xFFFF, 0x10000, 0x10FFFF};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        int n = utf8_encode(points[i], out);
        CHECK(utf8_sequence_length((const unsigned char *)out, (size_t)n) == n);
    }
    char excerpt[UTF8_EXCERPT_CAP];
    CHECK(!strcmp(utf8_excerpt("a\"\n\xC3", 4, excerpt, sizeof excerpt), "\"a\\x22\\x0A\\xC3\""));
}
