/*
 * fuzz_launchwire.c - libFuzzer harness for what the executor reads from a launcher on a node
 * (launchwire.h): a report body (launchwire_report_parse) and, for the launcher's side, an
 * answer (launchwire_answer_parse). A report that is taken is encoded again
 * (launchwire_report_json) and must be taken again with the same members.
 *
 * Input layout: the body itself.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "launchwire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_launchwire_again(const struct launchwire_report *r)
{
    struct launchwire_report back;
    struct ty_err err;
    json_t *o = launchwire_report_json(r);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;

    json_decref(o);
    if (!text)
        return;
    if (launchwire_report_parse(text, strlen(text), &back, &err) != 0)
        abort();
    if (strcmp(back.job, r->job) || strcmp(back.node, r->node) || back.host != r->host ||
        back.seq != r->seq || back.attempt != r->attempt || back.phase != r->phase ||
        back.exit_code != r->exit_code || back.exit_signal != r->exit_signal ||
        strcmp(back.failure, r->failure) || strcmp(back.model_error, r->model_error) ||
        json_array_size(back.lines) != json_array_size(r->lines))
        abort();
    launchwire_report_free(&back);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct launchwire_report r;
    struct launchwire_answer a;
    struct ty_err err;

    if (launchwire_report_parse((const char *)data, size, &r, &err) == 0) {
        if (r.host < 0 || r.host >= LAUNCHWIRE_MAX_HOSTS || r.seq < 1 || !r.job[0] || !r.node[0] ||
            !r.doc || json_array_size(r.lines) > LAUNCHWIRE_MAX_LINES)
            abort();
        fuzz_launchwire_again(&r);
        launchwire_report_free(&r);
    } else if (r.doc) {
        abort();
    }
    if (launchwire_answer_parse((const char *)data, size, &a, &err) == 0 &&
        (a.ack < 0 || a.grace_s < 0))
        abort();
    return 0;
}
