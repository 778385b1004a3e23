/*
 * metrics.h - request counters and latency histograms per operation, and their Prometheus text
 * exposition (format 0.0.4).
 *
 * Owns: a fixed, lock-free table of (service, operation) series: request counts by status class
 * (2xx..5xx) and a latency histogram (fixed buckets) each, all relaxed atomics, so that
 * observing a request costs a hash, a probe and a few atomic adds. Names are copied into the
 * table on first use; past METRICS_MAX_SERIES distinct operations the rest count under
 * operation "other". Does not own the gauges read at scrape time (queue depth, jobs, agents,
 * Redis and engine health): metrics_scrape.c gathers those.
 * Thread-safety: every function is safe from any thread.
 */
#ifndef TY_CP_METRICS_H
#define TY_CP_METRICS_H

#include <stddef.h>

#include "ty_buf.h"

#define METRICS_MAX_SERIES 256

/*
 * Counts one request of service/op (borrowed; copied on first use, cut to 63 bytes each; NULL
 * or "" count as "other") answered with HTTP status after seconds of handling.
 */
void metrics_observe(const char *service, const char *op, int status, double seconds);

/*
 * Appends the request series to OUT: b as Prometheus text: trainyard_requests_total{service,
 * operation,code} and the histogram trainyard_request_duration_seconds{service,operation}.
 * Returns 0, or -1 when b could not hold it all.
 */
int metrics_render_requests(struct ty_buf *b);

/* The HTTP method as a static operation label ("GET", ..., "OTHER"), for S3's series. */
const char *metrics_method(const char *method);

/* Appends s to b escaped as a Prometheus label value (backslash, quote, newline). */
int metrics_label(struct ty_buf *b, const char *s);

#endif
