/*
 * metricdefs.h - MetricDefinitions: PCRE2 regexes matched against every log line of a job, the
 * first capture group being the value; the last value of each metric and its timestamp become
 * FinalMetricDataList; every match is also kept as a data point until metricdefs_take() hands it to
 * the CloudWatch series (store_metrics.h).
 *
 * Owns: the compiled regexes and the last values. A regex that does not compile is skipped
 * (logged); matching is bounded (match limit, line length) so a hostile regex or line cannot
 * stall the log reader. Thread-safe: an internal mutex guards the values, so one thread may feed
 * lines while another reads the list.
 */
#ifndef TY_CP_AGENT_METRICDEFS_H
#define TY_CP_AGENT_METRICDEFS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define METRICDEFS_MAX      40    /* AWS's limit on MetricDefinitions */
#define METRICDEFS_MAX_LINE 65536 /* longer lines are matched on their first bytes only */
#define METRICDEFS_PENDING  4096  /* points kept for metricdefs_take (the newest win) */

/* One match of a definition: a data point of the CloudWatch series of that metric. */
struct metricdefs_point {
    int def;  /* index of the definition (metricdefs_name) */
    long seq; /* 0, 1, ... per definition: points with the same timestamp stay apart */
    int64_t ts_ms;
    double value;
};

struct metricdefs;

/* new: from defs (borrowed array of {"Name","Regex"}; NULL or [] = none). Free with
   metricdefs_free(). NULL only on allocation failure. */
struct metricdefs *metricdefs_new(json_t *defs);
void metricdefs_free(struct metricdefs *m);

/* Number of definitions that compiled. */
int metricdefs_count(const struct metricdefs *m);

/* Matches one line (len bytes, need not be NUL-terminated) logged at ts_ms. Returns the number
   of metrics it updated. */
int metricdefs_feed(struct metricdefs *m, const char *line, size_t len, int64_t ts_ms);

/* new: [{"MetricName","Value","Timestamp"(epoch s)}] in definition order, only metrics seen.
   OUT: *changed (may be NULL) = 1 when a value changed since the previous call. */
json_t *metricdefs_final(struct metricdefs *m, int *changed);

/* Takes up to max of the points matched since the last call, oldest first (the CloudWatch
   series, store_metrics.h). OUT: out. Returns how many. */
size_t metricdefs_take(struct metricdefs *m, struct metricdefs_point *out, size_t max);
/* borrowed: the name of definition def, NULL when out of range. */
const char *metricdefs_name(const struct metricdefs *m, int def);

#endif
