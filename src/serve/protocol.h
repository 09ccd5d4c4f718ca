/* The Open Inference Protocol's (KServe v2) tensors: an inference request's
 * JSON, with tensor data inline or in the binary-tensor extension (raw
 * bytes after the JSON, Inference-Header-Content-Length giving the JSON's
 * length), decoded into host tensors; a response encoded the same two ways.
 *
 * The request is hostile input: the JSON parser is strict (io/json.h), and
 * every count, shape, size and offset is checked before it is used. Errors
 * are PORTA_ERR_INVALID_ARGUMENT (or PORTA_ERR_UNSUPPORTED for a datatype
 * Porta has not) with a message naming the tensor, what was expected and
 * what was given; the server answers them with 400. */
#ifndef PORTA_SERVE_PROTOCOL_H
#define PORTA_SERVE_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "porta.h"

/* A tensor on the host, row-major. */
typedef struct serve_tensor {
    char *name;
    porta_dtype dtype;
    int rank;
    int64_t sizes[PORTA_MAX_RANK];
    void *data; /* `bytes` long: malloc'd, or `owner`'s memory */
    size_t bytes;
    /* When set, data lies in this tensor's host memory (a model output on
     * a host-memory device, handed over without a copy): released in place
     * of freeing data. */
    porta_tensor *owner;
} serve_tensor;

/* An output the request asks for, and whether as binary data. */
typedef struct serve_output_spec {
    char *name;
    bool binary;
} serve_output_spec;

typedef struct serve_request {
    char *id; /* NULL when the request gave none */
    serve_tensor *inputs;
    int input_count;
    serve_output_spec *outputs; /* none listed: every output */
    int output_count;
    bool binary_default; /* parameters.binary_data_output */
} serve_request;

/* "FP32" for PORTA_F32, ... */
const char *serve_datatype_name(porta_dtype dtype);
/* The dtype of a protocol datatype; PORTA_ERR_UNSUPPORTED for the
 * protocol's types Porta has not (UINT16..UINT64, BYTES), INVALID_ARGUMENT
 * for names outside the protocol. `what` names the tensor in messages. */
porta_status *serve_datatype_parse(const char *name, const char *what, porta_dtype *out);

/* Decodes a request body of `length` bytes whose first `json_length` bytes
 * are the JSON (json_length == length without binary data). */
porta_status *serve_request_parse(const char *body, size_t length, size_t json_length,
                                  serve_request **out);
void serve_request_free(serve_request *request);
void serve_tensor_clear(serve_tensor *tensor);
/* serve_tensor_clear on each of `count` tensors (none when NULL). */
void serve_tensors_clear(serve_tensor *tensors, int count);

/* Encodes a response: outputs[] are the model's outputs (all of them, in
 * model order), of which the request's `outputs` (or every one) are sent,
 * binary when asked. *body (free()) holds the JSON then the binary data;
 * *json_length is the JSON's length (== *length when nothing is binary). */
porta_status *serve_response_encode(const char *model_name, const char *model_version,
                                    const serve_request *request, const serve_tensor *outputs,
                                    int output_count, char **body, size_t *length,
                                    size_t *json_length);

struct core_text;
/* A reply's opening, {"model_name":...,"model_version":... (unclosed). */
void serve_reply_head(struct core_text *text, const char *model_name, const char *model_version);
/* One generate_stream event: data: {"model_name", "model_version",
 * "output_ids": [token]} and a blank line. */
void serve_token_event(struct core_text *text, const char *model_name, const char *model_version,
                       int64_t token);

#endif
