/*
 * metricdefs.c - MetricDefinitions regexes over log lines (PCRE2, JIT when available).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include "metricdefs.h"

#include "ty_log.h"

#include <math.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define METRICDEFS_MATCH_LIMIT 1000000

struct metricdefs_def {
    char *name;
    pcre2_code *re;
    double value;
    int64_t ts_ms;
    int seen;
    long seq; /* points seen so far (their sequence numbers) */
};

struct metricdefs {
    pthread_mutex_t mu;
    struct metricdefs_def defs[METRICDEFS_MAX];
    int n;
    int changed;
    pcre2_match_data *md;                                /* guarded by mu */
    pcre2_match_context *mc;                             /* match limit */
    struct metricdefs_point pending[METRICDEFS_PENDING]; /* not yet taken; the oldest dropped */
    size_t npending;
    long dropped;
};

struct metricdefs *metricdefs_new(json_t *defs)
{
    struct metricdefs *m = calloc(1, sizeof(*m));
    size_t i;
    json_t *d;

    if (!m)
        return NULL;
    pthread_mutex_init(&m->mu, NULL);
    m->md = pcre2_match_data_create(16, NULL);
    m->mc = pcre2_match_context_create(NULL);
    if (!m->md || !m->mc) {
        metricdefs_free(m);
        return NULL;
    }
    pcre2_set_match_limit(m->mc, METRICDEFS_MATCH_LIMIT);
    json_array_foreach(defs, i, d)
    {
        const char *name = json_string_value(json_object_get(d, "Name"));
        const char *rx = json_string_value(json_object_get(d, "Regex"));
        int ec;
        PCRE2_SIZE eo;
        pcre2_code *re;

        if (m->n >= METRICDEFS_MAX)
            break;
        if (!name || !rx)
            continue;
        re = pcre2_compile((PCRE2_SPTR)rx, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_NO_UTF_CHECK,
                           &ec, &eo, NULL);
        if (!re) {
            PCRE2_UCHAR msg[128];
            pcre2_get_error_message(ec, msg, sizeof(msg));
            ty_log(TY_LOG_WARN, "agent.metric.bad_regex", "metric='%s' offset=%zu error='%s'", name,
                   (size_t)eo, (const char *)msg);
            continue;
        }
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* best effort */
        m->defs[m->n].name = strdup(name);
        if (!m->defs[m->n].name) {
            pcre2_code_free(re);
            metricdefs_free(m);
            return NULL;
        }
        m->defs[m->n].re = re;
        m->n++;
    }
    return m;
}

void metricdefs_free(struct metricdefs *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++) {
        free(m->defs[i].name);
        pcre2_code_free(m->defs[i].re);
    }
    pcre2_match_data_free(m->md);
    pcre2_match_context_free(m->mc);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

int metricdefs_count(const struct metricdefs *m)
{
    return m ? m->n : 0;
}

int metricdefs_feed(struct metricdefs *m, const char *line, size_t len, int64_t ts_ms)
{
    int updated = 0;

    if (!m || m->n == 0)
        return 0;
    if (len > METRICDEFS_MAX_LINE)
        len = METRICDEFS_MAX_LINE;
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n; i++) {
        struct metricdefs_def *d = &m->defs[i];
        PCRE2_SIZE *ov;
        char num[64], *end;
        size_t vl;
        double v;
        int rc = pcre2_match(d->re, (PCRE2_SPTR)line, len, 0, 0, m->md, m->mc);

        if (rc < 2) /* no match, an error, or no capture group */
            continue;
        ov = pcre2_get_ovector_pointer(m->md);
        if (ov[2] == PCRE2_UNSET || ov[3] < ov[2])
            continue;
        vl = ov[3] - ov[2];
        if (vl == 0 || vl >= sizeof(num))
            continue;
        memcpy(num, line + ov[2], vl);
        num[vl] = '\0';
        v = strtod(num, &end);
        if (end == num || !isfinite(v))
            continue;
        d->value = v;
        d->ts_ms = ts_ms;
        d->seen = 1;
        if (m->npending == METRICDEFS_PENDING) { /* nobody takes them: keep the newest */
            memmove(&m->pending[0], &m->pending[1],
                    sizeof(m->pending[0]) * (METRICDEFS_PENDING - 1));
            m->npending--;
            m->dropped++;
        }
        m->pending[m->npending].def = i;
        m->pending[m->npending].value = v;
        m->pending[m->npending].ts_ms = ts_ms;
        m->pending[m->npending].seq = d->seq++;
        m->npending++;
        m->changed = 1;
        updated++;
    }
    pthread_mutex_unlock(&m->mu);
    return updated;
}

json_t *metricdefs_final(struct metricdefs *m, int *changed)
{
    json_t *out = json_array();

    if (!out || !m) {
        if (changed)
            *changed = 0;
        return out;
    }
    pthread_mutex_lock(&m->mu);
    for (int i = 0; i < m->n; i++) {
        struct metricdefs_def *d = &m->defs[i];
        if (!d->seen)
            continue;
        json_array_append_new(out, json_pack("{s:s, s:f, s:f}", "MetricName", d->name, "Value",
                                             d->value, "Timestamp", (double)d->ts_ms / 1000.0));
    }
    if (changed)
        *changed = m->changed;
    m->changed = 0;
    pthread_mutex_unlock(&m->mu);
    return out;
}

size_t metricdefs_take(struct metricdefs *m, struct metricdefs_point *out, size_t max)
{
    size_t n;

    if (!m)
        return 0;
    pthread_mutex_lock(&m->mu);
    n = m->npending < max ? m->npending : max;
    memcpy(out, m->pending, sizeof(*out) * n);
    memmove(&m->pending[0], &m->pending[n], sizeof(*out) * (m->npending - n));
    m->npending -= n;
    pthread_mutex_unlock(&m->mu);
    return n;
}

const char *metricdefs_name(const struct metricdefs *m, int def)
{
    return m && def >= 0 && def < m->n ? m->defs[def].name : NULL;
}
