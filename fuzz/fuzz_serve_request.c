/* libFuzzer target for `porta serve`'s request parser (src/serve/
 * protocol_decode.c): the first byte says how many of the last bytes are
 * binary data (the rest is the JSON, as Inference-Header-Content-Length
 * would say). Any input is either refused with a message, or gives inputs
 * whose rank, sizes and byte count agree and whose binary data lies inside
 * the body; those inputs are then encoded back as a response, whose JSON
 * must parse. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "serve/protocol.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_tensor(const serve_tensor *t) {
    if (t->rank < 0 || t->rank > PORTA_MAX_RANK || !t->name || !t->data) abort();
    uint64_t numel = 1;
    for (int d = 0; d < t->rank; d++) {
        if (t->sizes[d] < 0) abort();
        numel *= (uint64_t)t->sizes[d];
    }
    if (numel * porta_dtype_size(t->dtype) != t->bytes) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *body = (const char *)data + 1;
    size_t length = size - 1, binary = data[0] < length ? data[0] : length;
    serve_request *request = NULL;
    porta_status *status = serve_request_parse(body, length, length - binary, &request);
    if (status) {
        if (!porta_status_message(status)) abort();
        porta_status_free(status);
        return 0;
    }
    size_t total = 0;
    for (int i = 0; i < request->input_count; i++) {
        check_tensor(&request->inputs[i]);
        total += request->inputs[i].bytes;
    }
    /* Binary inputs take exactly the bytes after the JSON. */
    if (binary && total < binary) abort();
    char *reply = NULL;
    size_t reply_length = 0, json_length = 0;
    status = serve_response_encode("m", "1", request, request->inputs, request->input_count,
                                   &reply, &reply_length, &json_length);
    if (status) {
        porta_status_free(status);
    } else {
        json_document *document = NULL;
        status = json_parse(reply, json_length, 64, &document);
        if (status) abort();
        json_document_free(document);
        free(reply);
    }
    serve_request_free(request);
    return 0;
}
