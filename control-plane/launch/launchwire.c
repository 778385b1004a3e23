/*
 * launchwire.c - the launcher's reports and the executor's answers on the wire (launchwire.h).
 * Owns nothing between calls.
 */
#include "launchwire.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *const launchwire_phases[] = {"staging", "running", "ended"};

/* A TrainingJobName: 1-63 of [A-Za-z0-9-], not starting with '-'. */
static int launchwire_job_ok(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n < 64 && s[0] != '-' &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-") == n;
}

/* A node's name: 1-63 of [A-Za-z0-9._-]. */
static int launchwire_node_ok(const char *s)
{
    size_t n = strlen(s);

    return n > 0 && n < 64 &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == n;
}

int launchwire_token_ok(const char *s)
{
    return s && strlen(s) == LAUNCHWIRE_TOKEN_HEX &&
           strspn(s, "0123456789abcdef") == LAUNCHWIRE_TOKEN_HEX;
}

json_t *launchwire_report_json(const struct launchwire_report *r)
{
    json_t *o = json_pack("{s:i, s:s, s:i, s:i, s:s, s:I, s:s}", "v", 1, "job", r->job, "attempt",
                          r->attempt, "host", r->host, "node", r->node, "seq", (json_int_t)r->seq,
                          "phase", launchwire_phases[r->phase]);
    int bad = !o;

    if (!bad && r->started > 0)
        bad |= json_object_set_new(o, "started", json_real(r->started));
    if (!bad && r->lines && json_array_size(r->lines))
        bad |= json_object_set(o, "lines", r->lines);
    if (!bad && r->phase == LAUNCHWIRE_ENDED) {
        json_t *e = json_pack("{s:i, s:i, s:b}", "code", r->exit_code, "signal", r->exit_signal,
                              "stopped", r->stopped);
        if (e && r->failure[0])
            bad |= json_object_set_new(e, "failure", json_string(r->failure));
        if (e && r->model_error[0])
            bad |= json_object_set_new(e, "model_error", json_string(r->model_error));
        if (e && r->error[0])
            bad |= json_object_set_new(e, "error", json_string(r->error));
        bad |= !e || json_object_set_new(o, "exit", e);
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

static int launchwire_bad(struct ty_err *err, const char *what)
{
    return ty_err_set(err, TY_EINVAL, NULL, "launcher report: %s", what);
}

/* Copies the string member key of o into out (size n); absent or not a string: -1. */
static int launchwire_str(json_t *o, const char *key, char *out, size_t n)
{
    const char *s = json_string_value(json_object_get(o, key));
    size_t len;

    if (!s || (len = strlen(s)) >= n)
        return -1;
    memcpy(out, s, len + 1);
    return 0;
}

/* The integer member key of o within [lo, hi]; -1 when absent, not one or out of range. */
static int launchwire_int(json_t *o, const char *key, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(o, key);

    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return -1;
    *out = json_integer_value(v);
    return 0;
}

/* Checks the lines: an array of [epoch_ms, "text", is_stderr]. */
static int launchwire_lines_ok(json_t *lines, struct ty_err *err)
{
    size_t i;
    json_t *l;

    if (!json_is_array(lines))
        return launchwire_bad(err, "\"lines\" must be an array");
    if (json_array_size(lines) > LAUNCHWIRE_MAX_LINES)
        return launchwire_bad(err, "more than 1000 lines in one report");
    json_array_foreach(lines, i, l)
    {
        json_t *ts = json_array_get(l, 0), *text = json_array_get(l, 1), *fd = json_array_get(l, 2);

        if (!json_is_array(l) || json_array_size(l) != 3 || !json_is_integer(ts) ||
            json_integer_value(ts) < 0 || !json_is_string(text) ||
            !(json_is_integer(fd) && (json_integer_value(fd) == 0 || json_integer_value(fd) == 1)))
            return launchwire_bad(err, "a line must be [epoch_ms, \"text\", 0 or 1]");
        if (json_string_length(text) > LAUNCHWIRE_MAX_LINE)
            return launchwire_bad(err, "a line is over 256 KiB");
    }
    return 0;
}

/* The "exit" member of an ended report. */
static int launchwire_exit(json_t *e, struct launchwire_report *r, struct ty_err *err)
{
    json_t *st = json_object_get(e, "stopped");
    const char *f = json_string_value(json_object_get(e, "failure"));
    const char *me = json_string_value(json_object_get(e, "model_error"));
    const char *le = json_string_value(json_object_get(e, "error"));
    long long code, sig;

    if (!json_is_object(e) || launchwire_int(e, "code", 0, 255, &code) < 0 ||
        launchwire_int(e, "signal", 0, 64, &sig) < 0 || (st && !json_is_boolean(st)))
        return launchwire_bad(err, "\"exit\" must be {\"code\": 0-255, \"signal\": 0-64, ...}");
    if ((json_object_get(e, "failure") && !f) || (json_object_get(e, "model_error") && !me) ||
        (json_object_get(e, "error") && !le))
        return launchwire_bad(err, "\"failure\", \"model_error\" and \"error\" must be strings");
    if (r->started <= 0 && (!le || !le[0]))
        return launchwire_bad(err, "an ended host that never \"started\" must say its \"error\"");
    r->exit_code = (int)code;
    r->exit_signal = (int)sig;
    r->stopped = json_is_true(st);
    /* the failure file is the user's: kept to its first bytes, as the local agent does */
    snprintf(r->failure, sizeof(r->failure), "%s", f ? f : "");
    snprintf(r->model_error, sizeof(r->model_error), "%s", me ? me : "");
    snprintf(r->error, sizeof(r->error), "%s", le ? le : "");
    return 0;
}

static int launchwire_report_read(const char *body, size_t n, struct launchwire_report *r,
                                  struct ty_err *err)
{
    json_error_t je;
    json_t *o, *started;
    long long v, host, seq, attempt;
    char phase[16];
    int p = -1;

    memset(r, 0, sizeof(*r));
    if (n > LAUNCHWIRE_MAX_BODY)
        return launchwire_bad(err, "over 4 MiB");
    if (!(o = json_loadb(body, n, JSON_REJECT_DUPLICATES, &je)) || !json_is_object(o)) {
        json_decref(o);
        return launchwire_bad(err, "not a JSON object");
    }
    r->doc = o;
    if (launchwire_int(o, "v", 1, 1, &v) < 0)
        return launchwire_bad(err, "\"v\" must be 1");
    if (launchwire_str(o, "job", r->job, sizeof(r->job)) < 0 || !launchwire_job_ok(r->job))
        return launchwire_bad(err, "\"job\" must be a TrainingJobName");
    if (launchwire_int(o, "attempt", 1, 1000000, &attempt) < 0 ||
        launchwire_int(o, "host", 0, LAUNCHWIRE_MAX_HOSTS - 1, &host) < 0 ||
        launchwire_int(o, "seq", 1, (long long)1 << 53, &seq) < 0)
        return launchwire_bad(err, "\"attempt\", \"host\" and \"seq\" must be integers in range");
    if (launchwire_str(o, "node", r->node, sizeof(r->node)) < 0 || !launchwire_node_ok(r->node))
        return launchwire_bad(err, "\"node\" must be a node's name");
    if (launchwire_str(o, "phase", phase, sizeof(phase)) == 0)
        for (int i = 0; i < 3; i++)
            if (strcmp(phase, launchwire_phases[i]) == 0)
                p = i;
    if (p < 0)
        return launchwire_bad(err, "\"phase\" must be staging, running or ended");
    r->attempt = (int)attempt;
    r->host = (int)host;
    r->seq = seq;
    r->phase = (enum launchwire_phase)p;
    started = json_object_get(o, "started");
    if (started && (!json_is_number(started) || !isfinite(json_number_value(started)) ||
                    json_number_value(started) <= 0 || json_number_value(started) > 1e11))
        return launchwire_bad(err, "\"started\" must be epoch seconds");
    r->started = started ? json_number_value(started) : 0;
    if (r->phase == LAUNCHWIRE_RUNNING && r->started <= 0)
        return launchwire_bad(err, "a running host must say when it \"started\"");
    if ((r->lines = json_object_get(o, "lines")) && launchwire_lines_ok(r->lines, err) < 0)
        return -TY_EINVAL;
    if (r->phase == LAUNCHWIRE_ENDED)
        return launchwire_exit(json_object_get(o, "exit"), r, err);
    if (json_object_get(o, "exit"))
        return launchwire_bad(err, "only an ended host has an \"exit\"");
    return 0;
}

int launchwire_report_parse(const char *body, size_t n, struct launchwire_report *r,
                            struct ty_err *err)
{
    int rc = launchwire_report_read(body, n, r, err);

    if (rc < 0)
        launchwire_report_free(r);
    return rc;
}

void launchwire_report_free(struct launchwire_report *r)
{
    json_decref(r->doc);
    r->doc = NULL;
    r->lines = NULL;
}

json_t *launchwire_answer_json(const struct launchwire_answer *a)
{
    return json_pack("{s:I, s:b, s:i, s:b}", "ack", (json_int_t)a->ack, "stop", a->stop, "grace",
                     a->grace_s, "upload", a->upload);
}

int launchwire_answer_parse(const char *body, size_t n, struct launchwire_answer *a,
                            struct ty_err *err)
{
    json_t *o = json_loadb(body, n, 0, NULL);
    json_t *stop = json_object_get(o, "stop"), *up = json_object_get(o, "upload");
    long long ack, grace;

    memset(a, 0, sizeof(*a));
    if (!json_is_object(o) || launchwire_int(o, "ack", 0, (long long)1 << 53, &ack) < 0 ||
        launchwire_int(o, "grace", 0, 86400, &grace) < 0 || !json_is_boolean(stop) ||
        !json_is_boolean(up)) {
        json_decref(o);
        return ty_err_set(err, TY_EINVAL, NULL, "the executor's answer is not one");
    }
    a->ack = ack;
    a->stop = json_is_true(stop);
    a->grace_s = (int)grace;
    a->upload = json_is_true(up);
    json_decref(o);
    return 0;
}
