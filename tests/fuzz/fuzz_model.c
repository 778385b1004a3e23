/*
 * fuzz_model.c - libFuzzer harness for apimodel_validate(): the input is a JSON body for one of the
 * operations in the embedded model (chosen by the first byte). Checks that validation never
 * crashes, never leaks, returns one of its documented codes and leaves a bounded, valid UTF-8
 * message. Build: -DTY_FUZZ=ON with clang (tests/fuzz); run ./fuzz_model [corpus dir].
 */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "apimodel.h"
#include "ty_err.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const OPS[][2] = {
    {"sagemaker", "CreateTrainingJob"}, {"sagemaker", "DescribeTrainingJob"},
    {"sagemaker", "ListTrainingJobs"},  {"sagemaker", "StopTrainingJob"},
    {"sagemaker", "UpdateTrainingJob"}, {"sagemaker", "DeleteTrainingJob"},
    {"sagemaker", "AddTags"},           {"sagemaker", "ListTags"},
    {"sagemaker", "DeleteTags"},        {"sagemaker", "CreateDomain"},
    {"sagemaker", "UpdateDomain"},      {"sagemaker", "CreateUserProfile"},
    {"sagemaker", "CreateApp"},         {"sagemaker", "CreatePresignedDomainUrl"},
    {"logs", "DescribeLogStreams"},     {"logs", "GetLogEvents"},
    {"logs", "FilterLogEvents"},        {"logs", "DescribeLogGroups"},
};

static struct apimodel *apimodel_once(void)
{
    static struct apimodel *m;
    if (!m) {
        struct ty_err err;
        m = apimodel_load_embedded(&err);
        if (!m)
            abort();
    }
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct apimodel *m = apimodel_once();
    struct ty_err err;
    json_error_t jerr;
    json_t *body, *check;
    int rc;

    if (size < 1)
        return 0;
    const char *const *op = OPS[data[0] % (sizeof(OPS) / sizeof(OPS[0]))];
    body = json_loadb((const char *)data + 1, size - 1, JSON_DECODE_ANY, &jerr);
    if (!body)
        return 0;
    ty_err_clear(&err);
    rc = apimodel_validate(m, op[0], op[1], body, &err);
    if (rc != 0 && rc != -TY_EINVAL && rc != -TY_ESERIAL)
        abort();
    if (strlen(err.msg) >= sizeof(err.msg))
        abort();
    check = json_string(err.msg); /* NULL when the message is not valid UTF-8 */
    if (!check)
        abort();
    json_decref(check);
    json_decref(body);
    return 0;
}
