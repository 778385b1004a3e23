/*
 * cloudwatch.c - CloudWatch ListMetrics, GetMetricStatistics and GetMetricData in the query and
 * JSON 1.0 protocols (cloudwatch.h).
 */
#define _GNU_SOURCE /* timegm */
#include "cloudwatch.h"

#include "auth.h"
#include "authz.h"
#include "sigv4.h"
#include "store_metrics.h"
#include "ty_buf.h"
#include "ty_codec.h"
#include "ty_log.h"
#include "ty_time.h"
#include "worker.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CW_NS          "http://monitoring.amazonaws.com/doc/2010-08-01/"
#define CW_TARGET      "GraniteServiceVersion20100801."
#define CW_MAX_POINTS  1440   /* GetMetricStatistics: data points per call */
#define CW_MAX_RAW     200000 /* raw points read per series and call */
#define CW_MAX_LIST    500    /* ListMetrics: metrics per answer */
#define CW_MAX_QUERIES 500    /* GetMetricData: queries per call */
#define CW_MAX_DATA    100800 /* GetMetricData: data points per call */
#define CW_RECENT_S    (3 * 3600)
#define CW_MAX_PUT     1000 /* PutMetricData: MetricData entries per call */
#define CW_MAX_VALUES  150  /* PutMetricData: Values per entry */
#define CW_MAX_COUNT                                                                               \
    1000 /* PutMetricData: points stored for one value's Count (or for a                           \
            StatisticValues' SampleCount) */
#define CW_MAX_DIMS 30
#define CW_PAST_S   (14 * 86400)
#define CW_FUTURE_S (2 * 3600)
#define CW_OUT_MAX  (16u * 1024 * 1024)

/* err with the CloudWatch code in field (cloudwatch.h). */
static int cw_fail(struct ty_err *err, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int cw_fail(struct ty_err *err, const char *code, const char *fmt, ...)
{
    va_list ap;
    err->code = TY_EINVAL;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    snprintf(err->field, sizeof(err->field), "%s", code);
    return -TY_EINVAL;
}

/* ---- the query form ---- */

/* new: s[0..n) percent- and '+'-decoded; a bad escape stays as it is. */
static char *cw_decode(const char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (o && ty_pct_decode(s, n, TY_PCT_PLUS_SPACE | TY_PCT_KEEP_BAD, o, n + 1, NULL) != 0)
        o[0] = '\0'; /* not reached: the result never outgrows s */
    return o;
}

/*
 * Sets key path k (dotted, decoded) to string v in root. 0, or -1 when a key segment or v is not
 * valid UTF-8 (jansson refuses it) or memory ran out: every jansson call is checked, since a
 * refused json_object_set_new frees the value it was given (a freed array once went on being
 * appended to, forever). A member index outside 1..1000 is ignored (0).
 */
static int cw_set_path(json_t *root, char *k, const char *v)
{
    char *segs[32];
    int n = 0;
    json_t *node = root;
    char *save = NULL;

    for (char *t = strtok_r(k, ".", &save); t && n < 32; t = strtok_r(NULL, ".", &save))
        segs[n++] = t;
    for (int i = 0; i < n && node;) {
        if (i + 2 < n && strcmp(segs[i + 1], "member") == 0) {
            json_t *arr = json_object_get(node, segs[i]), *el;
            long idx = strtol(segs[i + 2], NULL, 10); /* LONG_MIN for "-99..9": no arithmetic */
            if (idx < 1 || idx > 1000)
                return 0;
            idx--;
            if (!json_is_array(arr)) {
                arr = json_array();
                if (!arr || json_object_set_new(node, segs[i], arr) != 0)
                    return -1;
            }
            while ((long)json_array_size(arr) <= idx) {
                if (json_array_append_new(arr, json_null()) != 0)
                    return -1;
            }
            if (i + 3 == n)
                return json_array_set_new(arr, (size_t)idx, json_string(v)) == 0 ? 0 : -1;
            el = json_array_get(arr, (size_t)idx);
            if (!json_is_object(el)) {
                el = json_object();
                if (!el || json_array_set_new(arr, (size_t)idx, el) != 0)
                    return -1;
            }
            node = el;
            i += 3;
            continue;
        }
        if (i + 1 == n)
            return json_object_set_new(node, segs[i], json_string(v)) == 0 ? 0 : -1;
        {
            json_t *child = json_object_get(node, segs[i]);
            if (!json_is_object(child)) {
                child = json_object();
                if (!child || json_object_set_new(node, segs[i], child) != 0)
                    return -1;
            }
            node = child;
        }
        i++;
    }
    return 0;
}

/* Drops the null holes left by sparse member indexes. */
static void cw_compact(json_t *v)
{
    const char *k;
    json_t *c;
    if (json_is_object(v)) {
        json_object_foreach(v, k, c)
        {
            cw_compact(c);
        }
    } else if (json_is_array(v)) {
        for (size_t i = json_array_size(v); i > 0; i--) {
            if (json_is_null(json_array_get(v, i - 1)))
                json_array_remove(v, i - 1);
            else
                cw_compact(json_array_get(v, i - 1));
        }
    }
}

json_t *cloudwatch_form_to_json(const char *s, size_t n)
{
    json_t *root = json_object();
    size_t i = 0;

    while (root && i < n) {
        size_t j = i, eq;
        char *k, *v;
        while (j < n && s[j] != '&')
            j++;
        for (eq = i; eq < j && s[eq] != '='; eq++)
            ;
        k = cw_decode(s + i, eq - i);
        v = cw_decode(eq < j ? s + eq + 1 : "", eq < j ? j - eq - 1 : 0);
        if (!k || !v ||
            (*k && strcmp(k, "Action") != 0 && strcmp(k, "Version") != 0 &&
             cw_set_path(root, k, v) != 0)) {
            json_decref(root);
            root = NULL;
        }
        free(k);
        free(v);
        i = j + 1;
    }
    if (!root)
        return NULL;
    cw_compact(root);
    return root;
}

/* ---- values ---- */

int cloudwatch_time(json_t *v, double *out)
{
    const char *s = json_string_value(v);
    struct tm tm;
    int y, mo, d, h = 0, mi = 0, n = 0;
    double sec = 0, off = 0;
    char *end;

    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!s)
        return -1;
    *out = strtod(s, &end);
    if (end != s && *end == '\0')
        return 0;
    if (sscanf(s, "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3)
        return -1;
    s += n;
    if (*s == 'T' || *s == ' ') {
        if (sscanf(s + 1, "%2d:%2d:%lf%n", &h, &mi, &sec, &n) != 3)
            return -1;
        s += 1 + n;
    }
    if (*s == '+' || *s == '-') {
        int oh = 0, om = 0;
        if (sscanf(s + 1, "%2d:%2d", &oh, &om) < 1)
            return -1;
        off = (*s == '-' ? -1 : 1) * (oh * 3600.0 + om * 60.0);
    } else if (*s != 'Z' && *s != 'z' && *s != '\0') {
        return -1;
    }
    memset(&tm, 0, sizeof(tm));
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
    tm.tm_hour = h;
    tm.tm_min = mi;
    *out = (double)timegm(&tm) + sec - off;
    return 0;
}

/* A number member (JSON number or numeric string). 0 or -1 (absent or not a number). */
static int cw_num(json_t *in, const char *k, double *out)
{
    json_t *v = json_object_get(in, k);
    const char *s = json_string_value(v);
    char *end;
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!s || !*s)
        return -1;
    *out = strtod(s, &end);
    return *end == '\0' && isfinite(*out) ? 0 : -1;
}

static const char *cw_str(json_t *in, const char *k)
{
    return json_string_value(json_object_get(in, k));
}

/* The percentile of an ExtendedStatistics/Stat name "p90", "p99.9"; -1 when not one. */
static double cw_pct(const char *st)
{
    char *end;
    double p;
    if (!st || (st[0] != 'p' && st[0] != 'P') || !isdigit((unsigned char)st[1]))
        return -1;
    p = strtod(st + 1, &end);
    return *end == '\0' && p >= 0 && p <= 100 ? p : -1;
}

static int cw_is_stat(const char *st)
{
    static const char *const names[] = {"SampleCount", "Average", "Sum", "Minimum", "Maximum"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (st && strcmp(st, names[i]) == 0)
            return 1;
    return 0;
}

static int cw_cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The statistic st of v[0..n) (n > 0; v is sorted in place for percentiles). */
static double cw_stat(const char *st, double *v, size_t n)
{
    double s = 0, mn = INFINITY, mx = -INFINITY, p = cw_pct(st);
    if (p >= 0) {
        double rank;
        qsort(v, n, sizeof(double), cw_cmpd);
        rank = p / 100.0 * (double)(n - 1);
        return v[(size_t)floor(rank)] +
               (rank - floor(rank)) * (v[(size_t)ceil(rank)] - v[(size_t)floor(rank)]);
    }
    for (size_t i = 0; i < n; i++) {
        s += v[i];
        mn = v[i] < mn ? v[i] : mn;
        mx = v[i] > mx ? v[i] : mx;
    }
    if (strcmp(st, "SampleCount") == 0)
        return (double)n;
    if (strcmp(st, "Sum") == 0)
        return s;
    if (strcmp(st, "Minimum") == 0)
        return mn;
    if (strcmp(st, "Maximum") == 0)
        return mx;
    return s / (double)n;
}

/* Period: >= 1; below 60 one of 1, 5, 10, 30; otherwise a multiple of 60 (AWS's rule). */
static int cw_period(json_t *in, const char *field, long *out, struct ty_err *err)
{
    double p;
    if (cw_num(in, field, &p) != 0)
        return json_object_get(in, field)
                   ? cw_fail(err, "InvalidParameterValue", "The parameter %s must be an integer.",
                             field)
                   : cw_fail(err, "MissingParameter", "The parameter %s is required.", field);
    if (p < 1 || p != floor(p) || (p < 60 && p != 1 && p != 5 && p != 10 && p != 30) ||
        (p >= 60 && fmod(p, 60) != 0))
        return cw_fail(err, "InvalidParameterValue",
                       "The parameter %s must be 1, 5, 10, 30 or a multiple of 60.", field);
    *out = (long)p;
    return 0;
}

static int cw_times(json_t *in, double *t0, double *t1, struct ty_err *err)
{
    if (!json_object_get(in, "StartTime"))
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "StartTime");
    if (!json_object_get(in, "EndTime"))
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "EndTime");
    if (cloudwatch_time(json_object_get(in, "StartTime"), t0) != 0)
        return cw_fail(err, "InvalidParameterValue", "The parameter %s must be a timestamp.",
                       "StartTime");
    if (cloudwatch_time(json_object_get(in, "EndTime"), t1) != 0)
        return cw_fail(err, "InvalidParameterValue", "The parameter %s must be a timestamp.",
                       "EndTime");
    *t0 = floor(*t0 * 1000.0) / 1000.0; /* the series keep milliseconds */
    if (*t0 >= *t1)
        return cw_fail(err, "InvalidParameterValue",
                       "The parameter StartTime must be less than the parameter EndTime.");
    return 0;
}

/* The metric's points in [t0, t1). new: *pts. */
static int cw_points(struct store *s, const char *ns, const char *metric, json_t *dims, double t0,
                     double t1, struct store_metric_point **pts, size_t *n, struct ty_err *err)
{
    char *id = store_metrics_id(ns, metric, dims);
    int rc;
    if (!id)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = store_metrics_range(s, id, (int64_t)floor(t0 * 1000), (int64_t)ceil(t1 * 1000), CW_MAX_RAW,
                             pts, n, err);
    free(id);
    return rc;
}

/* ---- the operations ---- */

/* NextToken: "<kind>.<hex of the resume point>", opaque to clients. new: the token. */
static char *cw_token_encode(const char *kind, const char *s)
{
    size_t n = strlen(s), k = strlen(kind);
    char *t = malloc(k + 1 + 2 * n + 1);
    if (!t)
        return NULL;
    memcpy(t, kind, k);
    t[k] = '.';
    for (size_t i = 0; i < n; i++)
        snprintf(t + k + 1 + 2 * i, 3, "%02x", (unsigned char)s[i]);
    t[k + 1 + 2 * n] = '\0';
    return t;
}

/* The resume point of token t of kind (new), or NULL with InvalidNextToken in err. */
static char *cw_token_decode(const char *kind, const char *t, struct ty_err *err)
{
    size_t k = strlen(kind), n;
    char *s;

    if (strncmp(t, kind, k) != 0 || t[k] != '.' || (n = strlen(t + k + 1)) % 2 != 0 || n == 0 ||
        !(s = malloc(n / 2 + 1))) {
        cw_fail(err, "InvalidNextToken",
                "The service couldn't process your request because "
                "the NextToken is invalid.");
        return NULL;
    }
    for (size_t i = 0; i < n / 2; i++) {
        int hi = ty_hex_value((unsigned char)t[k + 1 + 2 * i]),
            lo = ty_hex_value((unsigned char)t[k + 2 + 2 * i]);
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(s);
            cw_fail(err, "InvalidNextToken",
                    "The service couldn't process your request "
                    "because the NextToken is invalid.");
            return NULL;
        }
        s[i] = (char)(hi * 16 + lo);
    }
    s[n / 2] = '\0';
    return s;
}

struct cw_listed {
    char *id; /* canonical JSON of the metric (store_metrics.h), owned */
    json_t *m;
};

static int cw_listed_cmp(const void *a, const void *b)
{
    return strcmp(((const struct cw_listed *)a)->id, ((const struct cw_listed *)b)->id);
}

int cloudwatch_list_metrics(struct store *s, json_t *in, double now, json_t **out,
                            struct ty_err *err)
{
    const char *recent = cw_str(in, "RecentlyActive"), *tok = cw_str(in, "NextToken");
    struct cw_listed *l = NULL;
    char *after = NULL;
    json_t *all, *m, *page;
    size_t i, n, start = 0;
    int64_t since = 0;

    if (recent) {
        if (strcmp(recent, "PT3H") != 0)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter RecentlyActive must be PT3H.");
        since = (int64_t)((now - CW_RECENT_S) * 1000);
    }
    if (tok && *tok && !(after = cw_token_decode("lm", tok, err)))
        return -TY_EINVAL;
    all = store_metrics_list(s, cw_str(in, "Namespace"), cw_str(in, "MetricName"),
                             json_object_get(in, "Dimensions"), since, (size_t)-1, err);
    if (!all) {
        free(after);
        return -err->code;
    }
    /* pages of 500 in the order of the metrics' canonical ids, resumed after the last one
       returned: stable while series come and go */
    n = json_array_size(all);
    l = calloc(n + 1, sizeof(*l));
    page = json_array();
    if (!l || !page)
        goto oom;
    json_array_foreach(all, i, m)
    {
        l[i].m = m;
        if (!(l[i].id = json_dumps(m, JSON_COMPACT | JSON_SORT_KEYS)))
            goto oom;
    }
    qsort(l, n, sizeof(*l), cw_listed_cmp);
    while (after && start < n && strcmp(l[start].id, after) <= 0)
        start++;
    for (i = start; i < n && i < start + CW_MAX_LIST; i++)
        json_array_append(page, l[i].m);
    *out = json_pack("{s:o}", "Metrics", page);
    page = NULL;
    if (i < n) {
        char *t = cw_token_encode("lm", l[i - 1].id);
        if (t)
            json_object_set_new(*out, "NextToken", json_string(t));
        free(t);
    }
    for (i = 0; i < n; i++)
        free(l[i].id);
    free(l);
    free(after);
    json_decref(all);
    return 0;
oom:
    for (i = 0; l && i < n; i++)
        free(l[i].id);
    free(l);
    free(after);
    json_decref(page);
    json_decref(all);
    return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
}

int cloudwatch_get_metric_statistics(struct store *s, json_t *in, json_t **out, struct ty_err *err)
{
    const char *ns = cw_str(in, "Namespace"), *metric = cw_str(in, "MetricName");
    json_t *stats = json_object_get(in, "Statistics"),
           *ext = json_object_get(in, "ExtendedStatistics");
    json_t *v, *dps;
    struct store_metric_point *pts = NULL;
    double t0, t1, *vals = NULL;
    long period;
    size_t n = 0, i, nb, start;
    int rc;

    if (!ns)
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "Namespace");
    if (!metric)
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "MetricName");
    if ((rc = cw_times(in, &t0, &t1, err)) || (rc = cw_period(in, "Period", &period, err)))
        return rc;
    if (json_array_size(stats) + json_array_size(ext) == 0)
        return cw_fail(err, "MissingParameter",
                       "Must specify either Statistics or ExtendedStatistics, but not both.");
    if (json_array_size(stats) > 0 && json_array_size(ext) > 0)
        return cw_fail(err, "InvalidParameterCombination",
                       "Must specify either Statistics or ExtendedStatistics, but not both.");
    json_array_foreach(stats, i, v)
    {
        if (!cw_is_stat(json_string_value(v)))
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter Statistics contains the invalid value '%s'.",
                           json_string_value(v));
    }
    json_array_foreach(ext, i, v)
    {
        if (cw_pct(json_string_value(v)) < 0)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter ExtendedStatistics contains the invalid value '%s'.",
                           json_string_value(v));
    }
    nb = (size_t)ceil((t1 - t0) / (double)period);
    if (nb > CW_MAX_POINTS) {
        char msg[32];
        snprintf(msg, sizeof(msg), "%zu", nb);
        return cw_fail(err, "InvalidParameterCombination",
                       "You have requested up to %s datapoints, which exceeds the limit of 1440. "
                       "You may reduce the datapoints requested by increasing Period, or "
                       "decreasing the time range.",
                       msg);
    }
    if ((rc = cw_points(s, ns, metric, json_object_get(in, "Dimensions"), t0, t1, &pts, &n, err)))
        return rc;
    vals = malloc(sizeof(double) * (n ? n : 1));
    dps = json_array();
    if (!vals || !dps) {
        free(pts);
        free(vals);
        json_decref(dps);
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    }
    for (start = 0; start < n;) {
        double ts = (double)pts[start].ts_ms / 1000.0;
        long b = (long)floor((ts - t0) / (double)period);
        double bstart = t0 + (double)b * (double)period;
        size_t k = 0, j = start;
        json_t *dp;
        while (j < n && (double)pts[j].ts_ms / 1000.0 < bstart + (double)period)
            vals[k++] = pts[j++].value;
        start = j;
        dp = json_pack("{s:f,s:s}", "Timestamp", bstart, "Unit", "None");
        json_array_foreach(stats, i, v)
        {
            json_object_set_new(dp, json_string_value(v),
                                json_real(cw_stat(json_string_value(v), vals, k)));
        }
        if (json_array_size(ext) > 0) {
            json_t *es = json_object();
            json_array_foreach(ext, i, v)
            {
                json_object_set_new(es, json_string_value(v),
                                    json_real(cw_stat(json_string_value(v), vals, k)));
            }
            json_object_set_new(dp, "ExtendedStatistics", es);
        }
        json_array_append_new(dps, dp);
    }
    free(pts);
    free(vals);
    *out = json_pack("{s:s,s:o}", "Label", metric, "Datapoints", dps);
    return 0;
}

int cloudwatch_get_metric_data(struct store *s, json_t *in, json_t **out, struct ty_err *err)
{
    json_t *qs = json_object_get(in, "MetricDataQueries"), *q, *results;
    const char *scan = cw_str(in, "ScanBy"), *tok = cw_str(in, "NextToken");
    double t0, t1, maxdp = CW_MAX_DATA;
    size_t i, total = 0, skip = 0, seen = 0;
    int rc, desc = !scan || strcmp(scan, "TimestampAscending") != 0, more = 0;

    if (json_array_size(qs) == 0)
        return cw_fail(err, "MissingParameter", "The parameter %s is required.",
                       "MetricDataQueries");
    if (json_array_size(qs) > CW_MAX_QUERIES)
        return cw_fail(err, "InvalidParameterValue",
                       "The collection MetricDataQueries must not have a size greater than 500.");
    if ((rc = cw_times(in, &t0, &t1, err)))
        return rc;
    if (cw_num(in, "MaxDatapoints", &maxdp) != 0)
        maxdp = CW_MAX_DATA;
    if (maxdp < 1)
        return cw_fail(err, "InvalidParameterValue",
                       "The parameter MaxDatapoints must be greater than 0.");
    if (tok && *tok) {
        /* the data points already returned, in the order of the queries and of ScanBy: a
           page resumes after them (the same request with the NextToken, as CloudWatch asks) */
        char *sk = cw_token_decode("md", tok, err), *end;
        unsigned long long v;
        if (!sk)
            return -TY_EINVAL;
        v = strtoull(sk, &end, 10);
        if (*end || end == sk) {
            free(sk);
            return cw_fail(err, "InvalidNextToken",
                           "The service couldn't process your request "
                           "because the NextToken is invalid.");
        }
        free(sk);
        skip = (size_t)v;
    }
    results = json_array();
    json_array_foreach(qs, i, q)
    {
        json_t *ms = json_object_get(q, "MetricStat"), *metric = json_object_get(ms, "Metric");
        json_t *ts = json_array(), *vs = json_array(), *r;
        const char *id = cw_str(q, "Id"), *stat = cw_str(ms, "Stat"), *label = cw_str(q, "Label");
        struct store_metric_point *pts = NULL;
        double *vals;
        size_t n = 0, start;
        long period;
        const char *rd = cw_str(q, "ReturnData");
        json_t *rdv = json_object_get(q, "ReturnData");

        if (!id) {
            rc = cw_fail(err, "MissingParameter", "The parameter %s is required.",
                         "MetricDataQueries.member.Id");
            goto bad;
        }
        if (!ms) {
            rc = cw_fail(err, "InvalidParameterValue",
                         "Metric math expressions are not supported here (query '%s' needs a "
                         "MetricStat).",
                         id);
            goto bad;
        }
        if (!stat || (!cw_is_stat(stat) && cw_pct(stat) < 0)) {
            rc = cw_fail(err, "InvalidParameterValue",
                         "The value of Stat of query '%s' is not a valid statistic.", id);
            goto bad;
        }
        if ((rc = cw_period(ms, "Period", &period, err)))
            goto bad;
        if ((rdv && json_is_false(rdv)) || (rd && strcmp(rd, "false") == 0)) {
            json_decref(ts);
            json_decref(vs);
            continue;
        }
        rc = cw_points(s, cw_str(metric, "Namespace"), cw_str(metric, "MetricName"),
                       json_object_get(metric, "Dimensions"), t0, t1, &pts, &n, err);
        if (rc)
            goto bad;
        vals = malloc(sizeof(double) * (n ? n : 1));
        for (start = 0; vals && start < n;) {
            double t = (double)pts[start].ts_ms / 1000.0;
            long b = (long)floor((t - t0) / (double)period);
            double bstart = t0 + (double)b * (double)period;
            size_t k = 0, j = start;
            while (j < n && (double)pts[j].ts_ms / 1000.0 < bstart + (double)period)
                vals[k++] = pts[j++].value;
            start = j;
            json_array_append_new(ts, json_real(bstart));
            json_array_append_new(vs, json_real(cw_stat(stat, vals, k)));
        }
        free(vals);
        free(pts);
        {
            /* this page's share: after the points earlier pages returned, at most MaxDatapoints
               in all; PartialData (and a NextToken) when some of the query's are left */
            json_t *pts_t = json_array(), *pts_v = json_array();
            size_t nb = json_array_size(ts), from = skip > seen ? skip - seen : 0;
            int partial = 0;
            if (from > nb)
                from = nb;
            for (size_t x = from; x < nb; x++) {
                size_t at = desc ? nb - 1 - x : x;
                if ((double)total >= maxdp) {
                    partial = more = 1;
                    break;
                }
                total++;
                json_array_append(pts_t, json_array_get(ts, at));
                json_array_append(pts_v, json_array_get(vs, at));
            }
            seen += nb;
            json_decref(ts);
            json_decref(vs);
            ts = pts_t;
            vs = pts_v;
            r = json_pack(
                "{s:s,s:s,s:o,s:o,s:s}", "Id", id, "Label",
                label ? label : (cw_str(metric, "MetricName") ? cw_str(metric, "MetricName") : id),
                "Timestamps", ts, "Values", vs, "StatusCode", partial ? "PartialData" : "Complete");
        }
        json_array_append_new(results, r);
        continue;
bad:
        json_decref(ts);
        json_decref(vs);
        json_decref(results);
        return rc;
    }
    *out = json_pack("{s:o,s:[]}", "MetricDataResults", results, "Messages");
    if (more) {
        char num[32], *t;
        snprintf(num, sizeof(num), "%zu", skip + total);
        if ((t = cw_token_encode("md", num)) != NULL)
            json_object_set_new(*out, "NextToken", json_string(t));
        free(t);
    }
    return 0;
}

/* The points one MetricData entry (borrowed, index i from 1) stands for, validated. new: *pts
   (free()), OUT: *n. 0 or -TY_EINVAL. StatisticValues become SampleCount points that keep its
   SampleCount, Sum, Minimum and Maximum (Minimum, Maximum and the rest at their mean). */
static int cw_put_points(json_t *d, size_t i, double now, struct store_metric_point **pts,
                         size_t *n, struct ty_err *err)
{
    static atomic_long seq;
    json_t *vals = json_object_get(d, "Values"), *counts = json_object_get(d, "Counts");
    json_t *sv = json_object_get(d, "StatisticValues"), *dims = json_object_get(d, "Dimensions");
    double ts = now, v, sc = 0, sum = 0, mn = 0, mx = 0;
    int has_v = json_object_get(d, "Value") != NULL;
    size_t cap = 0, k = 0, j;
    json_t *x;

    if (!cw_str(d, "MetricName") || !*cw_str(d, "MetricName"))
        return cw_fail(err, "MissingParameter",
                       "The parameter MetricData.member.%zu.MetricName is required.", i);
    if (json_array_size(dims) > CW_MAX_DIMS)
        return cw_fail(err, "InvalidParameterValue",
                       "The collection MetricData.member.%zu.Dimensions must not have a size "
                       "greater than 30.",
                       i);
    json_array_foreach(dims, j, x)
    {
        if (!cw_str(x, "Name") || !cw_str(x, "Value"))
            return cw_fail(err, "MissingParameter",
                           "The parameter MetricData.member.%zu.Dimensions.member.%zu.%s is "
                           "required.",
                           i, j + 1, cw_str(x, "Name") ? "Value" : "Name");
    }
    if (json_object_get(d, "Timestamp")) {
        if (cloudwatch_time(json_object_get(d, "Timestamp"), &ts) != 0)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter MetricData.member.%zu.Timestamp is not a valid "
                           "timestamp.",
                           i);
        if (ts < now - CW_PAST_S)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter MetricData.member.%zu.Timestamp must specify a time "
                           "no more than two weeks in the past.",
                           i);
        if (ts > now + CW_FUTURE_S)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter MetricData.member.%zu.Timestamp must specify a time "
                           "no more than two hours in the future.",
                           i);
    }
    if (has_v + (vals != NULL) + (sv != NULL) > 1)
        return cw_fail(err, "InvalidParameterCombination",
                       "The parameters MetricData.member.%zu.Value, Values and StatisticValues "
                       "are mutually exclusive and you have specified more than one.",
                       i);
    if (has_v) {
        if (cw_num(d, "Value", &v) != 0)
            return cw_fail(err, "InvalidParameterValue",
                           "The value for parameter MetricData.member.%zu.Value is not a "
                           "valid number.",
                           i);
        cap = 1;
    } else if (vals) {
        if (json_array_size(vals) > CW_MAX_VALUES)
            return cw_fail(err, "InvalidParameterValue",
                           "The collection MetricData.member.%zu.Values must not have a size "
                           "greater than 150.",
                           i);
        if (counts && json_array_size(counts) != json_array_size(vals))
            return cw_fail(err, "InvalidParameterValue",
                           "The parameters MetricData.member.%zu.Values and "
                           "MetricData.member.%zu.Counts must be of the same size.",
                           i, i);
        cap = json_array_size(vals) * CW_MAX_COUNT;
    } else if (sv) {
        if (cw_num(sv, "SampleCount", &sc) != 0 || cw_num(sv, "Sum", &sum) != 0 ||
            cw_num(sv, "Minimum", &mn) != 0 || cw_num(sv, "Maximum", &mx) != 0 || sc <= 0 ||
            mn > mx)
            return cw_fail(err, "InvalidParameterValue",
                           "The parameter MetricData.member.%zu.StatisticValues needs "
                           "SampleCount (> 0), Sum, Minimum and Maximum (Minimum <= Maximum).",
                           i);
        cap = sc < CW_MAX_COUNT ? (size_t)ceil(sc) : CW_MAX_COUNT;
    } else {
        return cw_fail(err, "MissingParameter",
                       "The parameter MetricData.member.%zu.Value is required.", i);
    }
    if (!(*pts = calloc(cap ? cap : 1, sizeof(**pts))))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
#define CW_PUT(val)                                                                                \
    do {                                                                                           \
        (*pts)[k].ts_ms = (int64_t)llround(ts * 1000);                                             \
        (*pts)[k].seq = atomic_fetch_add(&seq, 1);                                                 \
        (*pts)[k].value = (val);                                                                   \
        k++;                                                                                       \
    } while (0)
    if (has_v) {
        CW_PUT(v);
    } else if (vals) {
        json_array_foreach(vals, j, x)
        {
            double c = 1, val;
            json_t *one = json_pack("{s:O,s:O?}", "v", x, "c", json_array_get(counts, j));
            int bad = !one || cw_num(one, "v", &val) != 0 ||
                      (json_array_get(counts, j) && (cw_num(one, "c", &c) != 0 || c < 0));
            json_decref(one);
            if (bad) {
                free(*pts);
                *pts = NULL;
                return cw_fail(err, "InvalidParameterValue",
                               "The values for parameter MetricData.member.%zu.Values and Counts "
                               "must be valid numbers.",
                               i);
            }
            for (long r = 0; r < (long)llround(c) && r < CW_MAX_COUNT; r++)
                CW_PUT(val);
        }
    } else if (cap == 1) {
        CW_PUT(sum / sc);
    } else {
        CW_PUT(mn);
        CW_PUT(mx);
        for (size_t r = 2; r < cap; r++)
            CW_PUT(cap > 2 ? (sum - mn - mx) / (double)(cap - 2) : 0);
    }
#undef CW_PUT
    *n = k;
    return 0;
}

int cloudwatch_put_metric_data(struct store *s, json_t *in, double now, struct ty_err *err)
{
    const char *ns = cw_str(in, "Namespace");
    json_t *data = json_object_get(in, "MetricData"), *d;
    struct store_metric_point **pts;
    size_t *np, i, nd = json_array_size(data);
    int rc = 0;

    if (!ns || !*ns)
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "Namespace");
    if (strncmp(ns, "AWS/", 4) == 0)
        return cw_fail(err, "InvalidParameterValue",
                       "The value %s for parameter Namespace is invalid.", ns);
    if (nd == 0)
        return cw_fail(err, "MissingParameter", "The parameter %s is required.", "MetricData");
    if (nd > CW_MAX_PUT)
        return cw_fail(err, "InvalidParameterValue",
                       "The collection MetricData must not have a size greater than 1000.");
    pts = calloc(nd, sizeof(*pts));
    np = calloc(nd, sizeof(*np));
    if (!pts || !np) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    /* every entry is checked before anything is written, as CloudWatch takes all or nothing */
    json_array_foreach(data, i, d)
    {
        if ((rc = cw_put_points(d, i + 1, now, &pts[i], &np[i], err)) != 0)
            goto done;
    }
    json_array_foreach(data, i, d)
    {
        rc = store_metrics_put(s, ns, cw_str(d, "MetricName"), json_object_get(d, "Dimensions"),
                               pts[i], np[i], (int64_t)(now * 1000), err);
        if (rc)
            break;
    }
done:
    for (i = 0; pts && i < nd; i++)
        free(pts[i]);
    free(pts);
    free(np);
    return rc;
}

/* ---- the wire ---- */

static void cw_iso(double t, char *buf, size_t n)
{
    time_t s = (time_t)floor(t);
    struct tm tm;
    int ms = (int)lround((t - floor(t)) * 1000);
    if (ms >= 1000) {
        s++;
        ms = 0;
    }
    gmtime_r(&s, &tm);
    snprintf(buf, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
             tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

/* XML of v (member name key) as the query protocol writes it: arrays as <member>, the
   ExtendedStatistics map as <entry><key/><value/></entry>, Timestamp(s) in ISO 8601. */
static void cw_xml(struct ty_buf *b, const char *key, json_t *v, int is_time)
{
    char num[64];
    const char *k;
    json_t *c;
    size_t i;

    if (json_is_object(v)) {
        int map = key && strcmp(key, "ExtendedStatistics") == 0;
        json_object_foreach(v, k, c)
        {
            if (map) {
                ty_buf_puts(b, "<entry><key>");
                ty_buf_put_xml(b, k);
                ty_buf_puts(b, "</key><value>");
                cw_xml(b, "value", c, 0);
                ty_buf_puts(b, "</value></entry>");
                continue;
            }
            ty_buf_printf(b, "<%s>", k);
            cw_xml(b, k, c, strcmp(k, "Timestamp") == 0 || strcmp(k, "Timestamps") == 0);
            ty_buf_printf(b, "</%s>", k);
        }
        return;
    }
    if (json_is_array(v)) {
        json_array_foreach(v, i, c)
        {
            ty_buf_puts(b, "<member>");
            cw_xml(b, "member", c, is_time);
            ty_buf_puts(b, "</member>");
        }
        return;
    }
    if (json_is_string(v)) {
        ty_buf_put_xml(b, json_string_value(v));
    } else if (json_is_number(v)) {
        if (is_time)
            cw_iso(json_number_value(v), num, sizeof(num));
        else if (key && strcmp(key, "value") != 0 && json_is_integer(v))
            snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
        else
            snprintf(num, sizeof(num), "%.17g", json_number_value(v));
        ty_buf_puts(b, num);
    } else if (json_is_boolean(v)) {
        ty_buf_puts(b, json_is_true(v) ? "true" : "false");
    }
}

static void cw_error(struct http_request *req, struct http_response *resp, int json, int status,
                     const char *code, const char *msg)
{
    char hdr[128];
    if (json) {
        json_t *body;
        body = json_pack("{s:s,s:s}", "__type", code, "message", msg);
        resp->body = json_dumps(body, JSON_COMPACT);
        json_decref(body);
        resp->len = resp->body ? strlen(resp->body) : 0;
        resp->content_type = "application/x-amz-json-1.0";
        snprintf(hdr, sizeof(hdr), "%s;%s", code, status >= 500 ? "Receiver" : "Sender");
        http_response_header(resp, "x-amzn-query-error", hdr);
        http_response_header(resp, "x-amzn-ErrorType", code);
    } else {
        struct ty_buf b;
        ty_buf_init(&b, 16384);
        ty_buf_printf(&b, "<ErrorResponse xmlns=\"" CW_NS "\"><Error><Type>%s</Type><Code>",
                      status >= 500 ? "Receiver" : "Sender");
        ty_buf_put_xml(&b, code);
        ty_buf_puts(&b, "</Code><Message>");
        ty_buf_put_xml(&b, msg);
        ty_buf_printf(&b, "</Message></Error><RequestId>%s</RequestId></ErrorResponse>",
                      req->request_id);
        resp->content_type = "text/xml";
        resp->len = b.len;
        resp->body = ty_buf_steal(&b);
    }
    resp->status = status;
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
}

/* CloudWatch's words for an auth_request failure at stage. */
static void cw_auth_error(struct http_request *req, struct http_response *resp, int json,
                          const struct ty_err *err, enum auth_stage stage)
{
    if (stage == AUTH_STAGE_PARSE) {
        if (err->code == TY_ENOAUTH)
            cw_error(req, resp, json, 403, "MissingAuthenticationToken",
                     "Request is missing Authentication Token");
        else
            cw_error(req, resp, json, 400, "IncompleteSignature", err->msg);
    } else if (err->code == TY_EREDIS) {
        cw_error(req, resp, json, 503, "ServiceUnavailable", err->msg);
    } else if (err->code == TY_ENOTFOUND || err->code == TY_EBADKEY) {
        cw_error(req, resp, json, 403, "InvalidClientTokenId",
                 "The security token included in the request is invalid.");
    } else if (err->code == TY_EEXPIREDTOKEN) {
        cw_error(req, resp, json, 403, "ExpiredToken", err->msg);
    } else {
        cw_error(req, resp, json, 403, "SignatureDoesNotMatch", err->msg);
    }
}

void cloudwatch_route(struct http_request *req, struct http_response *resp,
                      const struct front_ctx *rc)
{
    const char *target = http_header(req, "X-Amz-Target");
    const char *body = req->body.data ? req->body.data : "";
    struct auth_in ain = {
        .redis_url = rc->redis_url, .service = "monitoring", .with_body = 1, .region = rc->region};
    struct worker *w = worker_self();
    struct auth_out ao;
    struct store *s;
    struct ty_err err;
    char action[64] = "";
    json_t *in = NULL, *out = NULL;
    int json = target != NULL, r;

    ty_err_clear(&err);
    if (req->too_big) {
        cw_error(req, resp, json, 413, "RequestEntityTooLarge", "Request body too large");
        return;
    }
    if (auth_request(w, req, &ain, time(NULL), &ao, &err) != 0) {
        cw_auth_error(req, resp, json, &err, ao.stage);
        return;
    }
    s = ao.store;
    if (json) {
        snprintf(action, sizeof(action), "%s",
                 strncmp(target, CW_TARGET, strlen(CW_TARGET)) == 0 ? target + strlen(CW_TARGET)
                                                                    : "");
        in = req->body.len ? json_loadb(body, req->body.len, 0, NULL) : json_object();
        if (!json_is_object(in)) {
            json_decref(in);
            cw_error(req, resp, json, 400, "SerializationException",
                     "Start of structure or map found where not expected.");
            return;
        }
    } else {
        if (!auth_form_param(body, req->body.len, "Action", action, sizeof(action)))
            auth_form_param(req->query, strlen(req->query), "Action", action, sizeof(action));
        in = req->body.len ? cloudwatch_form_to_json(body, req->body.len)
                           : cloudwatch_form_to_json(req->query, strlen(req->query));
        if (!in) {
            cw_error(req, resp, json, 400, "InvalidParameterValue",
                     "A form parameter's name or value is not valid UTF-8.");
            return;
        }
    }
    if (strcmp(action, "ListMetrics") != 0 && strcmp(action, "GetMetricStatistics") != 0 &&
        strcmp(action, "GetMetricData") != 0 && strcmp(action, "PutMetricData") != 0) {
        char msg[160];
        snprintf(msg, sizeof(msg), "Could not find operation %.64s for version 2010-08-01", action);
        json_decref(in);
        cw_error(req, resp, json, 400, json ? "UnknownOperationException" : "InvalidAction", msg);
        return;
    }
    if (authz_request(s, "cloudwatch", action, in, ao.p.arn, rc->region, rc->account_id, &err) !=
        0) {
        json_decref(in);
        if (err.code == TY_EDENIED)
            cw_error(req, resp, json, 403, "AccessDenied", err.msg);
        else
            cw_error(req, resp, json, ty_err_http_status(err.code), "InternalFailure", err.msg);
        return;
    }
    if (strcmp(action, "ListMetrics") == 0)
        r = cloudwatch_list_metrics(s, in, ty_wall_s(), &out, &err);
    else if (strcmp(action, "GetMetricStatistics") == 0)
        r = cloudwatch_get_metric_statistics(s, in, &out, &err);
    else if (strcmp(action, "PutMetricData") == 0)
        r = cloudwatch_put_metric_data(s, in, ty_wall_s(), &err);
    else
        r = cloudwatch_get_metric_data(s, in, &out, &err);
    json_decref(in);
    if (r != 0) {
        if (err.code == TY_EINVAL)
            cw_error(req, resp, json, 400, err.field[0] ? err.field : "InvalidParameterValue",
                     err.msg);
        else
            cw_error(req, resp, json, ty_err_http_status(err.code), "InternalFailure", err.msg);
        worker_failed(w, err.code);
        return;
    }
    if (json && !out) { /* PutMetricData: no output members */
        resp->body = strdup("{}");
        resp->len = resp->body ? 2 : 0;
        resp->content_type = "application/x-amz-json-1.0";
    } else if (json) {
        resp->body = json_dumps(out, JSON_COMPACT | JSON_REAL_PRECISION(17));
        resp->len = resp->body ? strlen(resp->body) : 0;
        resp->content_type = "application/x-amz-json-1.0";
    } else {
        struct ty_buf b;
        ty_buf_init(&b, CW_OUT_MAX);
        ty_buf_printf(&b, "<%sResponse xmlns=\"" CW_NS "\">", action);
        if (out) {
            ty_buf_printf(&b, "<%sResult>", action);
            cw_xml(&b, NULL, out, 0);
            ty_buf_printf(&b, "</%sResult>", action);
        }
        ty_buf_printf(&b,
                      "<ResponseMetadata><RequestId>%s</RequestId></ResponseMetadata>"
                      "</%sResponse>",
                      req->request_id, action);
        resp->content_type = "text/xml";
        resp->len = b.len;
        resp->body = ty_buf_steal(&b);
    }
    json_decref(out);
    resp->status = 200;
    http_response_header(resp, "x-amzn-RequestId", req->request_id);
    ty_log(TY_LOG_DEBUG, "http.ok", "req=%s op=%s protocol=%s", req->request_id, action,
           json ? "json" : "query");
}
