/*
 * metrics.h - MetricDefinitions: PCRE2 regexes matched against every log line of a job, the
 * first capture group being the value; the last value of each metric and its timestamp become
 * FinalMetricDataList; every match is also kept as a data point until metrics_take() hands it to
 * the CloudWatch series (store_metrics.h).
 *
 * Owns: the compiled regexes and the last values. A regex that does not compile is skipped
 * (logged); matching is bounded (match limit, line length) so a hostile regex or line cannot
 * stall the log reader. Thread-safe: an internal mutex guards the values, so one thread may feed
 * lines while another reads the list.
 */
#ifndef TY_CP_AGENT_METRICS_H
#define TY_CP_AGENT_METRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define METRICS_MAX      40    /* AWS's limit on MetricDefinitions */
#define METRICS_MAX_LINE 65536 /* longer lines are matched on their first bytes only */
#define METRICS_PENDING  4096  /* points kept for metrics_take (the newest win) */

/* One match of a definition: a data point of the CloudWatch series of that metric. */
struct metrics_point {
    int def;  /* index of the definition (metrics_name) */
    long seq; /* 0, 1, ... per definition: points with the same timestamp stay apart */
    int64_t ts_ms;
    double value;
};

struct metrics;

/* new: from defs (borrowed array of {"Name","Regex"}; NULL or [] = none). Free with
   metrics_free(). NULL only on allocation failure. */
struct metrics *metrics_new(json_t *defs);
void metrics_free(struct metrics *m);

/* Number of definitions that compiled. */
int metrics_count(const struct metrics *m);

/* Matches one line (len bytes, need not be NUL-terminated) logged at ts_ms. Returns the number
   of metrics it updated. */
int metrics_feed(struct metrics *m, const char *line, size_t len, int64_t ts_ms);

/* new: [{"MetricName","Value","Timestamp"(epoch s)}] in definition order, only metrics seen.
   OUT: *changed (may be NULL) = 1 when a value changed since the previous call. */
json_t *metrics_final(struct metrics *m, int *changed);

/* Takes up to max of the points matched since the last call, oldest first (the CloudWatch
   series, store_metrics.h). OUT: out. Returns how many. */
size_t metrics_take(struct metrics *m, struct metrics_point *out, size_t max);
/* borrowed: the name of definition def, NULL when out of range. */
const char *metrics_name(const struct metrics *m, int def);

#endif
