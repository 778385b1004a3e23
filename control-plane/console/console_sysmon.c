/*
 * console_sysmon.c - a profiled job's system metrics for the console's charts
 * (console_sysmon.h).
 */
#include "console_sysmon.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "authz.h"
#include "console_html.h"
#include "console_job.h"
#include "objstore.h"
#include "ty_buf.h"

enum { SM_CPU, SM_MEM, SM_GPU, SM_GPUMEM, SM_RX, SM_TX, SM_N };

static const char *const sysmon_names[SM_N] = {"cpu", "mem", "gpu", "gpumem", "rx", "tx"};

struct sysmon_sample {
    double t;
    double sum[SM_N];
    int n[SM_N];
};

struct sysmon_acc {
    struct sysmon_sample *s;
    size_t n, cap;
    int gpus;
};

/* The series a line feeds (Type/Dimension), or -1. */
static int sysmon_kind(const char *type, const char *dim)
{
    if (strcmp(type, "cpu") == 0 && strcmp(dim, "CPUUtilization") == 0)
        return SM_CPU;
    if (strcmp(type, "memory") == 0)
        return SM_MEM;
    if (strcmp(type, "gpu") == 0 && strcmp(dim, "GPUUtilization") == 0)
        return SM_GPU;
    if (strcmp(type, "gpu") == 0 && strcmp(dim, "GPUMemoryUtilization") == 0)
        return SM_GPUMEM;
    if (strcmp(type, "network") == 0 && strcmp(dim, "ReceiveBytesPerSecond") == 0)
        return SM_RX;
    if (strcmp(type, "network") == 0 && strcmp(dim, "TransmitBytesPerSecond") == 0)
        return SM_TX;
    return -1;
}

/* One JSON line into acc. */
static void sysmon_line(struct sysmon_acc *acc, const char *line, size_t len, const char *node)
{
    json_t *o = json_loadb(line, len, 0, NULL);
    const char *type = json_string_value(json_object_get(o, "Type"));
    const char *dim = json_string_value(json_object_get(o, "Dimension"));
    const char *name = json_string_value(json_object_get(o, "Name"));
    const char *nid = json_string_value(json_object_get(o, "NodeId"));
    json_t *tv = json_object_get(o, "Timestamp"), *vv = json_object_get(o, "Value");
    struct sysmon_sample *cur;
    double t, v;
    int k;

    if (!type || !dim || !json_is_number(tv) || !json_is_number(vv) ||
        (nid && node && strcmp(nid, node) != 0) || (k = sysmon_kind(type, dim)) < 0)
        goto out;
    t = json_number_value(tv);
    v = json_number_value(vv);
    if (!isfinite(t) || !isfinite(v))
        goto out;
    /* the cpu_iowait line is not a core */
    if (k == SM_CPU && name && strncmp(name, "cpu", 3) == 0 && !(name[3] >= '0' && name[3] <= '9'))
        goto out;
    if (acc->n == 0 || acc->s[acc->n - 1].t != t) {
        if (acc->n == acc->cap) {
            size_t nc = acc->cap ? acc->cap * 2 : 256;
            struct sysmon_sample *ns = realloc(acc->s, nc * sizeof(*ns));
            if (!ns)
                goto out;
            acc->s = ns;
            acc->cap = nc;
        }
        memset(&acc->s[acc->n], 0, sizeof(acc->s[0]));
        acc->s[acc->n++].t = t;
    }
    cur = &acc->s[acc->n - 1];
    cur->sum[k] += v;
    cur->n[k]++;
    if (k == SM_GPU && cur->n[k] > acc->gpus)
        acc->gpus = cur->n[k];
out:
    json_decref(o);
}

json_t *console_sysmon_series(const char *text, size_t len, const char *node, size_t max_points)
{
    struct sysmon_acc acc = {NULL, 0, 0, 0};
    const char *p = text, *end = text + len;
    json_t *out = json_object(), *arr[SM_N], *ts = json_array();
    size_t first;

    while (p && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        if (le > p)
            sysmon_line(&acc, p, (size_t)(le - p), node);
        p = nl ? nl + 1 : end;
    }
    first = acc.n > max_points ? acc.n - max_points : 0;
    for (int k = 0; k < SM_N; k++)
        arr[k] = json_array();
    for (size_t i = first; i < acc.n; i++) {
        json_array_append_new(ts, json_real(acc.s[i].t));
        for (int k = 0; k < SM_N; k++)
            json_array_append_new(arr[k], acc.s[i].n[k] ? json_real(acc.s[i].sum[k] / acc.s[i].n[k])
                                                        : json_null());
    }
    json_object_set_new(out, "t", ts);
    for (int k = 0; k < SM_N; k++)
        json_object_set_new(out, sysmon_names[k], arr[k]);
    json_object_set_new(out, "gpus", json_integer(acc.gpus));
    free(acc.s);
    return out;
}

/* Splits s3://bucket/key. OUT: bucket (n bytes), *key (borrowed). 0 or -1. */
static int sysmon_s3(const char *uri, char *bucket, size_t n, const char **key)
{
    const char *slash;
    if (!uri || strncmp(uri, "s3://", 5) != 0 || !(slash = strchr(uri + 5, '/')) ||
        slash == uri + 5 || (size_t)(slash - uri - 5) >= n)
        return -1;
    memcpy(bucket, uri + 5, (size_t)(slash - uri - 5));
    bucket[slash - uri - 5] = '\0';
    *key = slash + 1;
    return 0;
}

/* Appends object bucket/key to b (up to b's ceiling). */
static void sysmon_read(struct objstore *os, const char *bucket, const char *key, struct ty_buf *b)
{
    struct objstore_meta meta;
    struct ty_err err;
    char chunk[65536];
    ssize_t r;
    int fd;

    memset(&meta, 0, sizeof(meta));
    ty_err_clear(&err);
    fd = objstore_open_read(os, bucket, key, &meta, &err);
    objstore_meta_cleanup(&meta);
    if (fd < 0)
        return;
    while ((r = read(fd, chunk, sizeof(chunk))) > 0)
        if (ty_buf_append(b, chunk, (size_t)r) != 0)
            break;
    close(fd);
    if (b->len > 0 && b->data[b->len - 1] != '\n')
        ty_buf_append(b, "\n", 1); /* a torn last line stays apart from the next file's first */
}

/* Reads the newest system-metrics files under prefix (".../system/incremental/") into b. */
static int sysmon_collect(struct objstore *os, const char *bucket, const char *prefix,
                          struct ty_buf *b, struct ty_err *err)
{
    struct objstore_listing hours, files[2];
    const char *keys[2 * 1000];
    size_t nk = 0, nh = 0, from;
    int rc;

    memset(&hours, 0, sizeof(hours));
    memset(files, 0, sizeof(files));
    if ((rc = objstore_list(os, bucket, prefix, "/", NULL, NULL, 1000, &hours, err)) != 0)
        return rc == -TY_ENOTFOUND ? 0 : rc;
    /* the two newest hour folders hold the newest files (keys sort by time) */
    for (size_t i = hours.n; i > 0 && nh < 2; i--) {
        if (!hours.e[i - 1].is_prefix)
            continue;
        nh++;
    }
    for (size_t i = hours.n, j = nh; i > 0 && j > 0; i--) {
        if (!hours.e[i - 1].is_prefix)
            continue;
        j--;
        if (objstore_list(os, bucket, hours.e[i - 1].key, NULL, NULL, NULL, 1000, &files[j], err) !=
            0)
            continue;
    }
    for (size_t j = 0; j < nh; j++)
        for (size_t i = 0; i < files[j].n; i++)
            if (!files[j].e[i].is_prefix)
                keys[nk++] = files[j].e[i].key;
    from = nk > CONSOLE_SYSMON_FILES ? nk - CONSOLE_SYSMON_FILES : 0;
    for (size_t i = from; i < nk; i++)
        sysmon_read(os, bucket, keys[i], b);
    objstore_listing_cleanup(&hours);
    objstore_listing_cleanup(&files[0]);
    objstore_listing_cleanup(&files[1]);
    ty_err_clear(err);
    return 0;
}

void console_sysmon_feed(const struct console_ctx *c, const char *name, struct http_response *resp)
{
    json_t *in = json_pack("{s:s}", "TrainingJobName", name), *job = NULL, *body = NULL;
    char bucket[64], arn[2300], prefix[2200], *pp = NULL;
    const char *key;
    struct objstore *os = NULL;
    struct ty_buf b;
    struct ty_err err;

    ty_err_clear(&err);
    ty_buf_init(&b, CONSOLE_SYSMON_BYTES);
    if (console_call(c, "sagemaker", "DescribeTrainingJob", in, &job, &err) != 0)
        goto fail;
    pp = console_job_profiler_prefix(job);
    if (!pp || sysmon_s3(pp, bucket, sizeof(bucket), &key) != 0) {
        body = json_pack("{s:b}", "enabled", 0);
        goto send;
    }
    snprintf(prefix, sizeof(prefix), "%s/profiler-output/system/incremental/", key);
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s", bucket);
    if (authz_check(c->s, c->sess->principal, "s3:ListBucket", arn, NULL, 0, &err) != 0)
        goto fail;
    snprintf(arn, sizeof(arn), "arn:aws:s3:::%s/%s", bucket, prefix);
    if (authz_check(c->s, c->sess->principal, "s3:GetObject", arn, NULL, 0, &err) != 0)
        goto fail;
    os = objstore_open(c->rc->s3_dir ? c->rc->s3_dir : "", c->s, &err);
    if (os && c->rc->s3_remote)
        objstore_use_remote(os, c->rc->s3_remote, &err);
    if (!os || sysmon_collect(os, bucket, prefix, &b, &err) != 0)
        goto fail;
    body = console_sysmon_series(b.data ? b.data : "", b.len, "algo-1", CONSOLE_SYSMON_POINTS);
    if (body)
        json_object_set_new(body, "enabled", json_true());
    goto send;
fail:
    if (err.code == TY_EOK)
        ty_err_set(&err, TY_EINTERNAL, NULL, "internal failure");
    json_decref(body);
    body = json_pack("{s:s,s:s}", "__type",
                     err.code == TY_EDENIED ? "AccessDenied" : ty_err_aws_name(err.code), "message",
                     err.msg);
    resp->status = ty_err_http_status(err.code);
    goto out;
send:
    resp->status = 200;
out:
    resp->content_type = "application/json";
    resp->body = body ? json_dumps(body, JSON_COMPACT) : NULL;
    resp->len = resp->body ? strlen(resp->body) : 0;
    json_decref(body);
    json_decref(in);
    json_decref(job);
    free(pp);
    objstore_close(os);
    ty_buf_cleanup(&b);
    console_html_headers(c->req, resp);
}
