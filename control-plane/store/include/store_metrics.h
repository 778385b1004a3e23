/*
 * store_metrics.h - CloudWatch metric series in Redis (the data behind ListMetrics,
 * GetMetricStatistics and GetMetricData, ops/cloudwatch.c).
 *
 * Owns the keys
 *   ty:cw:pts:<metric id>  sorted set: one member "<ts_ms>:<seq>:<value>" per data point,
 *                          scored by its timestamp in ms; PEXPIRE = the retention
 *   ty:cw:index            sorted set of metric ids scored by their last point's timestamp
 * where <metric id> is the metric's canonical JSON {"Dimensions":[{"Name","Value"}...] sorted
 * by Name,"MetricName","Namespace"} (compact, sorted keys).
 * Retention: every write drops the series' points older than the retention and keeps at most
 * max_points per series (oldest dropped); a series and its index entry go once no point is
 * newer than the retention. Memory: about 145 bytes per point (docs/cloudwatch.md, measured by
 * test_store_metrics).
 * Does not own: parsing log lines into points (agent/metrics.c), statistics (ops/cloudwatch.c).
 * Thread-safety: as store.h (one struct store per thread); the limits are process-wide and set
 * once at start-up.
 */
#ifndef TY_CP_STORE_METRICS_H
#define TY_CP_STORE_METRICS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"
#include "ty_err.h"

#define STORE_METRICS_NS_SAGEMAKER "/aws/sagemaker/TrainingJobs"
#define STORE_METRICS_RETENTION_S  (15 * 86400) /* CloudWatch keeps 1-minute data 15 days */
#define STORE_METRICS_MAX_POINTS   100000       /* per series */

struct store_metric_point {
    int64_t ts_ms;
    long seq; /* tells apart points with the same timestamp and value */
    double value;
};

/* Sets the retention (seconds, >= 60) and the per-series cap (>= 10); call before threads. */
void store_metrics_limits(long retention_s, long max_points);

/* new: the canonical metric id of ns/metric with dims (borrowed array of {"Name","Value"},
   NULL = none). Free with free(). NULL on allocation failure. */
char *store_metrics_id(const char *ns, const char *metric, json_t *dims);

/*
 * Appends n points to the series ns/metric/dims (dims borrowed, as above), applies the
 * retention at time now_ms and updates the index, in one pipeline. 0 or -TY_EREDIS.
 */
int store_metrics_put(struct store *s, const char *ns, const char *metric, json_t *dims,
                      const struct store_metric_point *p, size_t n, int64_t now_ms,
                      struct ty_err *err);

/*
 * The points of the series with id (store_metrics_id) whose timestamps lie in [t0_ms, t1_ms),
 * oldest first, at most max. new: *out (free()) and OUT: *n. 0 or -TY_EREDIS.
 */
int store_metrics_range(struct store *s, const char *id, int64_t t0_ms, int64_t t1_ms, size_t max,
                        struct store_metric_point **out, size_t *n, struct ty_err *err);

/*
 * The metrics with a point at or after since_ms (0 = any within the retention), optionally
 * only namespace ns and metric name (NULL = any) and carrying every dimension of dims
 * (borrowed array of {"Name"[, "Value"]}; NULL = any). new: array of {"Namespace",
 * "MetricName","Dimensions"} (at most max), or NULL with err.
 */
json_t *store_metrics_list(struct store *s, const char *ns, const char *metric, json_t *dims,
                           int64_t since_ms, size_t max, struct ty_err *err);

#endif
