/* The Open Inference Protocol's tensor codec (src/serve/protocol*.c): every
 * datatype Porta has, flat and nested JSON data, the binary-tensor
 * extension both ways, and hostile requests, each refused with a message
 * naming the tensor, what was expected and what was given. */
#include <stdlib.h>
#include <string.h>

#include "core/dtype.h"
#include "serve/protocol.h"
#include "test.h"

static serve_request *parse_json(const char *json) {
    serve_request *request = NULL;
    porta_status *status = serve_request_parse(json, strlen(json), strlen(json), &request);
    if (status) {
        test_fail(__FILE__, __LINE__, "%s", porta_status_message(status));
        porta_status_free(status);
    }
    return request;
}

static porta_status *parse_error(const char *json) {
    serve_request *request = NULL;
    porta_status *status = serve_request_parse(json, strlen(json), strlen(json), &request);
    if (!status) serve_request_free(request);
    return status;
}

TEST(serve_protocol_decodes_every_datatype) {
    serve_request *r = parse_json(
        "{\"id\":\"r1\",\"inputs\":["
        "{\"name\":\"b\",\"shape\":[3],\"datatype\":\"BOOL\",\"data\":[true,false,true]},"
        "{\"name\":\"u8\",\"shape\":[2],\"datatype\":\"UINT8\",\"data\":[0,255]},"
        "{\"name\":\"i8\",\"shape\":[2],\"datatype\":\"INT8\",\"data\":[-128,127]},"
        "{\"name\":\"i16\",\"shape\":[1],\"datatype\":\"INT16\",\"data\":[-32768]},"
        "{\"name\":\"i32\",\"shape\":[1],\"datatype\":\"INT32\",\"data\":[2147483647]},"
        "{\"name\":\"i64\",\"shape\":[1],\"datatype\":\"INT64\",\"data\":[-9223372036854775807]},"
        "{\"name\":\"h\",\"shape\":[1],\"datatype\":\"FP16\",\"data\":[1.5]},"
        "{\"name\":\"bf\",\"shape\":[1],\"datatype\":\"BF16\",\"data\":[-2]},"
        "{\"name\":\"f\",\"shape\":[2,2],\"datatype\":\"FP32\",\"data\":[[1,2],[3,4.5]]},"
        "{\"name\":\"d\",\"shape\":[],\"datatype\":\"FP64\",\"data\":[0.1]}]}");
    if (!r) return;
    CHECK(r->input_count == 10 && !strcmp(r->id, "r1") && r->output_count == 0);
    const uint8_t *b = r->inputs[0].data;
    CHECK(r->inputs[0].dtype == PORTA_BOOL && b[0] == 1 && b[1] == 0 && b[2] == 1);
    CHECK(((uint8_t *)r->inputs[1].data)[1] == 255);
    CHECK(((int8_t *)r->inputs[2].data)[0] == -128);
    CHECK(((int16_t *)r->inputs[3].data)[0] == -32768);
    CHECK(((int32_t *)r->inputs[4].data)[0] == 2147483647);
    CHECK(((int64_t *)r->inputs[5].data)[0] == -9223372036854775807LL);
    CHECK(core_f16_to_f32(((uint16_t *)r->inputs[6].data)[0]) == 1.5f);
    CHECK(core_bf16_to_f32(((uint16_t *)r->inputs[7].data)[0]) == -2.0f);
    const float *f = r->inputs[8].data;
    CHECK(r->inputs[8].rank == 2 && r->inputs[8].bytes == 16 && f[0] == 1 && f[3] == 4.5f);
    CHECK(r->inputs[9].rank == 0 && ((double *)r->inputs[9].data)[0] == 0.1);
    serve_request_free(r);
}

TEST(serve_protocol_decodes_binary_data) {
    const char json[] = "{\"inputs\":[{\"name\":\"x\",\"shape\":[2],\"datatype\":\"FP32\","
                        "\"parameters\":{\"binary_data_size\":8}},"
                        "{\"name\":\"y\",\"shape\":[1],\"datatype\":\"INT16\","
                        "\"parameters\":{\"binary_data_size\":2}}],"
                        "\"parameters\":{\"binary_data_output\":true},"
                        "\"outputs\":[{\"name\":\"o\"},{\"name\":\"p\",\"parameters\":"
                        "{\"binary_data\":false}}]}";
    float x[2] = {1.25f, -3};
    int16_t y = 7;
    char body[sizeof json - 1 + 10];
    memcpy(body, json, sizeof json - 1);
    memcpy(body + sizeof json - 1, x, 8);
    memcpy(body + sizeof json - 1 + 8, &y, 2);
    serve_request *r = NULL;
    CHECK_OK(serve_request_parse(body, sizeof body, sizeof json - 1, &r));
    CHECK(!memcmp(r->inputs[0].data, x, 8) && *(int16_t *)r->inputs[1].data == 7);
    CHECK(r->output_count == 2 && r->outputs[0].binary && !r->outputs[1].binary);
    serve_request_free(r);
    /* A byte too few, a byte too many. */
    CHECK_ERR(serve_request_parse(body, sizeof body - 1, sizeof json - 1, &r),
              PORTA_ERR_INVALID_ARGUMENT, "binary data of 2 bytes expected, 1 bytes are left");
    char longer[sizeof body + 1];
    memcpy(longer, body, sizeof body);
    CHECK_ERR(serve_request_parse(longer, sizeof longer, sizeof json - 1, &r),
              PORTA_ERR_INVALID_ARGUMENT, "11 bytes of binary data follow the JSON, the inputs' binary_data_size take 10");
    CHECK_ERR(serve_request_parse(body, sizeof body, sizeof body + 1, &r),
              PORTA_ERR_INVALID_ARGUMENT, "Inference-Header-Content-Length");
}

TEST(serve_protocol_rejects_bad_requests) {
    struct {
        const char *json, *needle;
        porta_code code;
    } cases[] = {
        {"[1]", "expected a JSON object, found an array", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":", "request JSON", PORTA_ERR_INVALID_ARGUMENT},
        {"{}", "expected a member \"inputs\"", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":{}}", "\"inputs\" should be an array, found an object", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[3],\"datatype\":\"FP32\",\"data\":[1,2]}]}",
         "input 'x': data has 2 elements, its shape needs 3", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"UINT8\",\"data\":[256]}]}",
         "element 0 should be an integer from 0 to 255 (UINT8), found 256",
         PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"INT32\",\"data\":[1.5]}]}",
         "should be an integer", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"BOOL\",\"data\":[1]}]}",
         "element 0 should be true or false (BOOL), found a number", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[\"a\"]}]}",
         "should be a number (FP32), found a string", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"BYTES\",\"data\":[\"a\"]}]}",
         "datatype BYTES is not supported", PORTA_ERR_UNSUPPORTED},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FLOAT\",\"data\":[1]}]}",
         "datatype 'FLOAT' is not one of the protocol's", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[-1],\"datatype\":\"FP32\",\"data\":[]}]}",
         "shape[0] should be an integer >= 0", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],"
         "\"datatype\":\"FP32\",\"data\":[1]}]}",
         "shape has 17 dims, at most 16", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[4294967296,4294967296],\"datatype\":\"FP32\","
         "\"data\":[]}]}",
         "shape holds more than", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1]},"
         "{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\",\"data\":[1]}]}",
         "'x' is given twice", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\"}]}",
         "input 'x': expected a member \"data\"", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[{\"name\":\"x\",\"shape\":[1],\"datatype\":\"FP32\","
         "\"parameters\":{\"binary_data_size\":3}}]}",
         "binary_data_size should be 4", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[],\"outputs\":[{\"name\":\"y\"},{\"name\":\"y\"}]}",
         "'y' is listed twice", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[],\"outputs\":[{\"name\":\"y\",\"parameters\":{\"binary_data\":1}}]}",
         "\"binary_data\" should be true or false", PORTA_ERR_INVALID_ARGUMENT},
        {"{\"inputs\":[],\"id\":\"\xc3\x28\"}", "request JSON", PORTA_ERR_INVALID_ARGUMENT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK_ERR(parse_error(cases[i].json), cases[i].code, cases[i].needle);
}

static serve_tensor output_of(const char *name, porta_dtype dtype, int rank,
                              const int64_t *sizes, const void *data, size_t bytes) {
    serve_tensor t = {.dtype = dtype, .rank = rank, .bytes = bytes};
    memcpy(t.sizes, sizes, (size_t)rank * sizeof *sizes);
    t.name = strdup(name);
    t.data = malloc(bytes);
    memcpy(t.data, data, bytes);
    return t;
}

TEST(serve_protocol_encodes_json_and_binary_outputs) {
    float values[3] = {0.5f, -1, 3.25f};
    uint8_t flags[2] = {1, 0};
    serve_tensor outputs[2] = {
        output_of("y", PORTA_F32, 2, (int64_t[]){1, 3}, values, sizeof values),
        output_of("mask", PORTA_BOOL, 1, (int64_t[]){2}, flags, sizeof flags),
    };
    serve_request every = {.id = "q"};
    char *body = NULL;
    size_t length = 0, json_length = 0;
    CHECK_OK(serve_response_encode("m", "1", &every, outputs, 2, &body, &length, &json_length));
    CHECK(json_length == length);
    CHECK_MSG(!strcmp(body, "{\"model_name\":\"m\",\"model_version\":\"1\",\"id\":\"q\","
                            "\"outputs\":[{\"name\":\"y\",\"datatype\":\"FP32\",\"shape\":[1,3],"
                            "\"data\":[0.5,-1,3.25]},{\"name\":\"mask\",\"datatype\":\"BOOL\","
                            "\"shape\":[2],\"data\":[true,false]}]}"),
              "got %s", body);
    free(body);
    serve_output_spec spec = {"y", true};
    serve_request binary = {.outputs = &spec, .output_count = 1};
    CHECK_OK(serve_response_encode("m", "1", &binary, outputs, 2, &body, &length, &json_length));
    CHECK(length == json_length + sizeof values && !memcmp(body + json_length, values, 12));
    CHECK(strstr(body, "\"parameters\":{\"binary_data_size\":12}") && !strstr(body, "mask"));
    free(body);
    spec.name = "z";
    CHECK_ERR(serve_response_encode("m", "1", &binary, outputs, 2, &body, &length, &json_length),
              PORTA_ERR_INVALID_ARGUMENT, "the model has no output 'z'");
    serve_tensor_clear(&outputs[0]);
    serve_tensor_clear(&outputs[1]);
}
