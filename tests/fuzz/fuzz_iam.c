/*
 * fuzz_iam.c - libFuzzer harness for iam_policy_parse / iam_evaluate / iam_denial_message.
 *
 * Input layout: the first line is "action resource key=value key=value ..." (space-separated,
 * every part optional), the rest is the policy document. The harness owns every string it
 * hands to the module. A document that parses is evaluated twice (the decision must be the
 * same: evaluation is pure) and, with the managed flag, must parse the same way or fail.
 *
 * Build: -DTY_FUZZ=ON with clang (tests/fuzz/CMakeLists.txt, README.md); run:
 * ./fuzz_iam -max_len=8192 corpus/
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "iam.h"

#define FUZZ_MAX_KEYS 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *nl = memchr(data, '\n', size);
    size_t hl = nl ? (size_t)(nl - (const char *)data) : 0;
    const char *doc = nl ? nl + 1 : (const char *)data;
    size_t dl = size - (size_t)(doc - (const char *)data);
    char *head = malloc(hl + 1), *save = NULL, *tok;
    struct iam_ctx_entry ctx[FUZZ_MAX_KEYS];
    const char *multi[3];
    struct iam_request req = {"sagemaker:CreateApp", "arn:aws:sagemaker:us-east-1:0:app/d/a/x/y",
                              ctx, 0};
    struct iam_policy *p = NULL, *q = NULL;
    struct ty_err err;
    char msg[2048];
    int field = 0;

    if (!head)
        return 0;
    memcpy(head, data, hl);
    head[hl] = '\0';
    for (tok = strtok_r(head, " ", &save); tok; tok = strtok_r(NULL, " ", &save), field++) {
        char *eq = strchr(tok, '=');
        if (field == 0 && !eq) {
            req.action = tok;
        } else if (field == 1 && !eq) {
            req.resource = tok;
        } else if (eq && req.ncontext < FUZZ_MAX_KEYS) {
            *eq = '\0';
            ctx[req.ncontext] = (struct iam_ctx_entry){.key = tok, .value = eq + 1};
            req.ncontext++;
        }
    }
    if (req.ncontext < FUZZ_MAX_KEYS) {
        multi[0] = "a";
        multi[1] = req.action;
        multi[2] = NULL;
        ctx[req.ncontext++] =
            (struct iam_ctx_entry){.key = "aws:TagKeys", .values = multi, .nvalues = 3};
    }
    if (iam_policy_parse(doc, dl, &p, &err) == 0) {
        const struct iam_policy *pols[2] = {p, NULL};
        struct iam_explain why;
        enum iam_decision d1 = iam_evaluate_ex(pols, 2, &req, &why);
        enum iam_decision d2 = iam_evaluate(pols, 1, &req);
        if (d1 != d2 || why.error)
            abort();
        if (d1 != IAM_DENY_IMPLICIT && why.statement >= iam_policy_nstatements(p))
            abort();
        iam_denial_message(msg, sizeof(msg), "arn:aws:iam::000000000000:user/f", req.action,
                           req.resource, d1, NULL);
        if (iam_policy_parse_ex(doc, dl, IAM_PARSE_MANAGED, &q, &err) == 0 &&
            iam_policy_nstatements(q) != iam_policy_nstatements(p))
            abort();
    } else if (err.code == TY_EOK || err.msg[0] == '\0') {
        abort();
    }
    iam_policy_free(q);
    iam_policy_free(p);
    free(head);
    return 0;
}
