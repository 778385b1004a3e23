/*
 * fuzz_form.c - libFuzzer harness for the form parsers that build a JSON input out of every
 * parameter of a query-protocol or console form: CloudWatch's (cloudwatch_form_to_json:
 * "X.member.N", dotted nesting), IAM's (op_iamapi_form: "Tags.member.N.Key") and the console's
 * /console/do form (console_call_input: "p.", "n.", "l.", "t." fields). The input is the raw
 * form body; names and values that are not UTF-8 once decoded are what issue 35 found (a worker
 * spinning for ever, writes to freed memory). Checks: each parser returns, the JSON it returns
 * is an object that jansson can dump (every key and string valid UTF-8), and a refusal sets
 * an error.
 */
#include "../../control-plane/console/console_call.h"

#include "cloudwatch.h"
#include "iamapi.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_form_check(json_t *in)
{
    char *dump;
    if (!in)
        return;
    if (!json_is_object(in))
        abort();
    dump = json_dumps(in, JSON_COMPACT);
    if (!dump) /* only valid UTF-8 gets into a jansson value */
        abort();
    free(dump);
    json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ty_err err;
    char *s = malloc(size + 1);
    json_t *in;

    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    fuzz_form_check(cloudwatch_form_to_json(s, size));
    ty_err_clear(&err);
    in = op_iamapi_form(NULL, s, size, &err);
    if (!in && err.code == 0)
        abort();
    fuzz_form_check(in);
    ty_err_clear(&err);
    in = console_call_input(s, size, &err);
    if (!in && err.code == 0)
        abort();
    fuzz_form_check(in);
    free(s);
    return 0;
}
