/*
 * metrics.c - the per-operation request series (metrics.h).
 *
 * A series slot moves from EMPTY to CLAIMING (one thread writes its names) to READY, never
 * back; readers use READY slots only. Counters are relaxed atomics: a scrape may see a count
 * one request ahead of its histogram, which Prometheus tolerates.
 */
#include "metrics.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define METRICS_NAME 64

/* Latency bucket upper bounds in seconds (le), then +Inf. */
static const double metrics_le[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                    0.25,  0.5,    1,     2.5,  5,     10};
#define METRICS_NLE (sizeof(metrics_le) / sizeof(metrics_le[0]))

enum { METRICS_EMPTY, METRICS_CLAIMING, METRICS_READY };

struct metrics_series {
    atomic_int state;
    char service[METRICS_NAME];
    char op[METRICS_NAME];
    atomic_ullong by_class[6];             /* 1xx..5xx by status / 100; [0] other */
    atomic_ullong bucket[METRICS_NLE + 1]; /* non-cumulative; last is +Inf */
    atomic_ullong sum_us;
};

static struct metrics_series metrics_tab[METRICS_MAX_SERIES];

static uint32_t metrics_hash(const char *a, const char *b)
{
    uint32_t h = 2166136261u;
    for (; *a; a++)
        h = (h ^ (unsigned char)*a) * 16777619u;
    h = (h ^ '/') * 16777619u;
    for (; *b; b++)
        h = (h ^ (unsigned char)*b) * 16777619u;
    return h;
}

/* The slot of service/op (names already cut), claiming a free one; NULL when the table is
   full. */
static struct metrics_series *metrics_find(const char *service, const char *op)
{
    uint32_t h = metrics_hash(service, op);
    for (size_t i = 0; i < METRICS_MAX_SERIES; i++) {
        struct metrics_series *s = &metrics_tab[(h + i) % METRICS_MAX_SERIES];
        int st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (st == METRICS_EMPTY) {
            int want = METRICS_EMPTY;
            if (atomic_compare_exchange_strong(&s->state, &want, METRICS_CLAIMING)) {
                snprintf(s->service, sizeof(s->service), "%s", service);
                snprintf(s->op, sizeof(s->op), "%s", op);
                atomic_store_explicit(&s->state, METRICS_READY, memory_order_release);
                return s;
            }
            st = want;
        }
        while (st == METRICS_CLAIMING)
            st = atomic_load_explicit(&s->state, memory_order_acquire);
        if (strcmp(s->service, service) == 0 && strcmp(s->op, op) == 0)
            return s;
    }
    return NULL;
}

void metrics_observe(const char *service, const char *op, int status, double seconds)
{
    char sv[METRICS_NAME], o[METRICS_NAME];
    struct metrics_series *s;
    size_t b = 0;
    int cls = status / 100;

    snprintf(sv, sizeof(sv), "%s", service && *service ? service : "other");
    snprintf(o, sizeof(o), "%s", op && *op ? op : "other");
    s = metrics_find(sv, o);
    if (!s)
        s = metrics_find(sv, "other");
    if (!s)
        return;
    if (seconds < 0)
        seconds = 0;
    while (b < METRICS_NLE && seconds > metrics_le[b])
        b++;
    atomic_fetch_add_explicit(&s->by_class[cls >= 1 && cls <= 5 ? cls : 0], 1,
                              memory_order_relaxed);
    atomic_fetch_add_explicit(&s->bucket[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->sum_us, (unsigned long long)(seconds * 1e6),
                              memory_order_relaxed);
}

const char *metrics_method(const char *method)
{
    static const char *const known[] = {"GET", "PUT", "POST", "HEAD", "DELETE", "OPTIONS"};
    for (size_t i = 0; method && i < sizeof(known) / sizeof(known[0]); i++)
        if (strcmp(method, known[i]) == 0)
            return known[i];
    return "OTHER";
}

int metrics_label(struct ty_buf *b, const char *s)
{
    int rc = 0;
    for (; *s && rc == 0; s++) {
        if (*s == '\\')
            rc = ty_buf_puts(b, "\\\\");
        else if (*s == '"')
            rc = ty_buf_puts(b, "\\\"");
        else if (*s == '\n')
            rc = ty_buf_puts(b, "\\n");
        else
            rc = ty_buf_append(b, s, 1);
    }
    return rc;
}

/* service="..",operation=".." */
static int metrics_labels(struct ty_buf *b, const struct metrics_series *s)
{
    int rc = ty_buf_puts(b, "service=\"");
    rc |= metrics_label(b, s->service);
    rc |= ty_buf_puts(b, "\",operation=\"");
    rc |= metrics_label(b, s->op);
    rc |= ty_buf_puts(b, "\"");
    return rc;
}

int metrics_render_requests(struct ty_buf *b)
{
    static const char *const cls[] = {"other", "1xx", "2xx", "3xx", "4xx", "5xx"};
    int rc = 0;

    rc |= ty_buf_puts(b, "# HELP trainyard_requests_total API requests answered, by operation "
                         "and status class.\n# TYPE trainyard_requests_total counter\n");
    for (size_t i = 0; i < METRICS_MAX_SERIES; i++) {
        const struct metrics_series *s = &metrics_tab[i];
        if (atomic_load_explicit(&s->state, memory_order_acquire) != METRICS_READY)
            continue;
        for (size_t c = 0; c < 6; c++) {
            unsigned long long n = atomic_load_explicit(&s->by_class[c], memory_order_relaxed);
            if (!n)
                continue;
            rc |= ty_buf_puts(b, "trainyard_requests_total{");
            rc |= metrics_labels(b, s);
            rc |= ty_buf_printf(b, ",code=\"%s\"} %llu\n", cls[c], n);
        }
    }
    rc |= ty_buf_puts(b, "# HELP trainyard_request_duration_seconds Time from a request's "
                         "complete arrival to its answer, by operation.\n"
                         "# TYPE trainyard_request_duration_seconds histogram\n");
    for (size_t i = 0; i < METRICS_MAX_SERIES; i++) {
        const struct metrics_series *s = &metrics_tab[i];
        unsigned long long cum = 0;
        if (atomic_load_explicit(&s->state, memory_order_acquire) != METRICS_READY)
            continue;
        for (size_t k = 0; k <= METRICS_NLE; k++) {
            cum += atomic_load_explicit(&s->bucket[k], memory_order_relaxed);
            rc |= ty_buf_puts(b, "trainyard_request_duration_seconds_bucket{");
            rc |= metrics_labels(b, s);
            if (k < METRICS_NLE)
                rc |= ty_buf_printf(b, ",le=\"%g\"} %llu\n", metrics_le[k], cum);
            else
                rc |= ty_buf_printf(b, ",le=\"+Inf\"} %llu\n", cum);
        }
        rc |= ty_buf_puts(b, "trainyard_request_duration_seconds_sum{");
        rc |= metrics_labels(b, s);
        rc |= ty_buf_printf(b, "} %.6f\n",
                            (double)atomic_load_explicit(&s->sum_us, memory_order_relaxed) / 1e6);
        rc |= ty_buf_puts(b, "trainyard_request_duration_seconds_count{");
        rc |= metrics_labels(b, s);
        rc |= ty_buf_printf(b, "} %llu\n", cum);
    }
    return rc ? -1 : 0;
}
