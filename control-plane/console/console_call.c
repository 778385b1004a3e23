/*
 * console_call.c - console actions as API operations of the signed-in principal
 * (console_call.h).
 */
#include "console_call.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "apimodel.h"
#include "auth.h"
#include "authz.h"
#include "iamapi.h"
#include "ops.h"
#include "ty_time.h"

#define CALL_MAX_FIELDS 64
#define CALL_MAX_VALUE  20000

const char *console_call_region(const struct console_ctx *c)
{
    return c->rc && c->rc->region && c->rc->region[0] ? c->rc->region : "us-east-1";
}

static const char *call_principal(const struct console_ctx *c)
{
    return c->sess && c->sess->principal ? c->sess->principal : "";
}

/* 1 when service/op reads only c->owned_job or its log streams: the profiler app shows a
   domain user his own job whatever his execution role may describe (a job's role needs no
   sagemaker:* and has none by default). */
static int call_owned_read(const struct console_ctx *c, const char *service, const char *op,
                           json_t *in)
{
    const char *j = c->owned_job, *v;
    size_t n = j ? strlen(j) : 0;

    if (!n)
        return 0;
    if (strcmp(service, "sagemaker") == 0 && strcmp(op, "DescribeTrainingJob") == 0)
        return (v = json_string_value(json_object_get(in, "TrainingJobName"))) && !strcmp(v, j);
    if (strcmp(service, "logs") != 0 ||
        (strcmp(op, "DescribeLogStreams") != 0 && strcmp(op, "GetLogEvents") != 0))
        return 0;
    v = json_string_value(json_object_get(in, "logGroupName"));
    if (!v || strcmp(v, "/aws/sagemaker/TrainingJobs") != 0)
        return 0;
    v = json_string_value(json_object_get(
        in, strcmp(op, "GetLogEvents") == 0 ? "logStreamName" : "logStreamNamePrefix"));
    return v && strncmp(v, j, n) == 0 && v[n] == '/';
}

int console_call(const struct console_ctx *c, const char *service, const char *op, json_t *in,
                 json_t **out, struct ty_err *err)
{
    const struct op_entry *e = op_lookup(service, op);
    op_fn fn = e ? e->fn : NULL;
    struct op_ctx ctx;
    json_t *res = NULL;
    int rc;

    if (!fn)
        return ty_err_set(err, TY_EUNKNOWNOP, NULL, "Unknown operation %.64s", op ? op : "");
    if (c->rc && c->rc->model && (rc = apimodel_validate(c->rc->model, service, op, in, err)) != 0)
        return rc;
    if ((rc = op_tags_reserved(service, op, in, err)) != 0)
        return rc;
    rc = call_owned_read(c, service, op, in)
             ? 0
             : authz_request(c->s, service, op, in, call_principal(c), console_call_region(c),
                             c->rc->account_id, err);
    if (rc != 0)
        return rc;
    memset(&ctx, 0, sizeof(ctx));
    ctx.store = c->s;
    ctx.region = console_call_region(c);
    ctx.account_id = c->rc->account_id;
    ctx.principal_arn = call_principal(c);
    ctx.now = ty_wall_s();
    ctx.host = http_header(c->req, "Host");
    ctx.s3_dir = c->rc->s3_dir;
    ctx.s3_remote = c->rc->s3_remote;
    if ((rc = fn(&ctx, in, &res, err)) != 0) {
        json_decref(res);
        return rc;
    }
    *out = res ? res : json_object();
    return 0;
}

int console_call_iam(const struct console_ctx *c, json_t *in, struct ty_buf *xml,
                     struct ty_err *err)
{
    return op_iamapi_invoke(c->s, c->rc->account_id, console_call_region(c), call_principal(c), in,
                            xml, err);
}

/* Percent-decodes a form field name in place ("t.a%3Ab" -> "t.a:b"). */
static void call_decode(char *s)
{
    char *o = s;
    for (; *s; s++) {
        if (*s == '%' && isxdigit((unsigned char)s[1]) && isxdigit((unsigned char)s[2])) {
            char h[3] = {s[1], s[2], 0};
            *o++ = (char)strtol(h, NULL, 16);
            s += 2;
        } else {
            *o++ = *s == '+' ? ' ' : *s;
        }
    }
    *o = '\0';
}

/* Sets v at the dotted path in obj (objects made on the way); v is taken. 0, or -1 for a bad
   path or a part that is not UTF-8. */
static int call_set(json_t *obj, const char *path, json_t *v)
{
    char part[128];
    const char *dot;
    while ((dot = strchr(path, '.')) != NULL) {
        json_t *next;
        if ((size_t)(dot - path) >= sizeof(part) || dot == path)
            goto fail;
        memcpy(part, path, (size_t)(dot - path));
        part[dot - path] = '\0';
        next = json_object_get(obj, part);
        if (!next) {
            /* a refused set (a part that is not UTF-8) frees next: never used after */
            next = json_object();
            if (!next || json_object_set_new(obj, part, next) != 0)
                goto fail;
        }
        if (!json_is_object(next))
            goto fail;
        obj = next;
        path = dot + 1;
    }
    if (!*path)
        goto fail;
    return json_object_set_new(obj, path, v) == 0 ? 0 : -1; /* v is taken either way */
fail:
    json_decref(v);
    return -1;
}

json_t *console_call_input(const char *body, size_t len, struct ty_err *err)
{
    json_t *in = json_object();
    const char *p = body, *end = body + len;
    int fields = 0;
    char *val = malloc(CALL_MAX_VALUE + 1);

    if (!in || !val)
        goto nomem;
    while (p && p < end) {
        const char *amp = memchr(p, '&', (size_t)(end - p));
        const char *e = amp ? amp : end, *eq = memchr(p, '=', (size_t)(e - p));
        char name[160];
        size_t nl;
        if (eq && eq - p > 2 && p[1] == '.' &&
            (p[0] == 'p' || p[0] == 'n' || p[0] == 'l' || p[0] == 't')) {
            char kind = p[0];
            nl = (size_t)(eq - p);
            if (nl >= sizeof(name) || ++fields > CALL_MAX_FIELDS) {
                ty_err_set(err, TY_EINVAL, NULL, "too many or too long form fields");
                goto fail;
            }
            memcpy(name, p, nl);
            name[nl] = '\0';
            if (!auth_form_param(p, (size_t)(e - p), name, val, CALL_MAX_VALUE + 1))
                val[0] = '\0';
            call_decode(name);
            if (val[0]) {
                json_t *v;
                if (kind == 'n') {
                    char *stop;
                    long long x = strtoll(val, &stop, 10);
                    if (*stop) {
                        ty_err_set(err, TY_EINVAL, name + 2, "%.64s must be a whole number",
                                   name + 2);
                        goto fail;
                    }
                    v = json_integer(x);
                } else if (kind == 'l') {
                    v = json_pack("[s]", val);
                } else if (kind == 't') {
                    json_t *tags = json_object_get(in, "Tags");
                    if (!tags) {
                        tags = json_array();
                        json_object_set_new(in, "Tags", tags);
                    }
                    v = json_pack("{s:s,s:s}", "Key", name + 2, "Value", val);
                    if (!v || json_array_append_new(tags, v) != 0) {
                        ty_err_set(err, TY_EINVAL, name + 2, "bad tag %.64s", name + 2);
                        goto fail;
                    }
                    p = amp ? amp + 1 : NULL;
                    continue;
                } else {
                    v = json_string(val);
                }
                if (!v || call_set(in, name + 2, v) != 0) {
                    ty_err_set(err, TY_EINVAL, name + 2, "bad form field %.64s", name + 2);
                    goto fail;
                }
            }
        }
        p = amp ? amp + 1 : NULL;
    }
    free(val);
    return in;
nomem:
    ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
fail:
    free(val);
    json_decref(in);
    return NULL;
}
