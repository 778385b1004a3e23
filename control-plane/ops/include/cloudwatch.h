/*
 * cloudwatch.h - CloudWatch metrics on trainyard's one port: ListMetrics, GetMetricStatistics,
 * GetMetricData (with NextToken pages) and PutMetricData over the series of store_metrics.h, in
 * both protocols botocore speaks to
 * CloudWatch:
 *   - query (botocore <= 1.3x, Debian's 1.29, the AWS CLI 2.9): POST / with a form body
 *     Action=<Op>&Version=2010-08-01&..., XML answers and XML errors;
 *   - JSON 1.0 (current botocore, the AWS SDKs): POST / with X-Amz-Target
 *     GraniteServiceVersion20100801.<Op>, Content-Type application/x-amz-json-1.0, JSON answers,
 *     errors as {"__type","message"} plus x-amzn-query-error "<Code>;Sender".
 * The signature's scope names service "monitoring"; the caller's policies are evaluated on
 * cloudwatch:<Op> on "*" (authz.c).
 * Owns: the CloudWatch front end, the query-form decoding into the JSON shape, statistics
 * (SampleCount, Average, Sum, Minimum, Maximum, pNN) and the XML rendering.
 * Does not own: the series (store_metrics.c), who writes them (agent/run.c).
 * Thread-safety: one Redis connection per HTTP worker thread (closed at thread exit).
 */
#ifndef TY_CP_OPS_CLOUDWATCH_H
#define TY_CP_OPS_CLOUDWATCH_H

#include <jansson.h>

#include "front_ctx.h"
#include "http.h"
#include "store.h"
#include "ty_err.h"

/* Serves one request whose auth_service_of() is "monitoring". */
void cloudwatch_route(struct http_request *req, struct http_response *resp,
                      const struct front_ctx *rc);

/* new: the query form s[0..n) (Action=...&Dimensions.member.1.Name=...) as the JSON input of
   the operation: "X.member.N" becomes the N-th element of array X, other dots nest objects,
   every leaf is a string. Action and Version are dropped. NULL when a name or value is not
   valid UTF-8 once decoded, or on allocation failure. */
json_t *cloudwatch_form_to_json(const char *s, size_t n);

/* Epoch seconds of a CloudWatch timestamp: a JSON number, or an ISO 8601 string
   ("2026-12-03T06:52:00Z", fractions and +hh:mm accepted) or a number in a string. 0 or -1. */
int cloudwatch_time(json_t *v, double *out);

/* The operations on a decoded input (borrowed); new *out. 0 or -TY_EINVAL (err->field holds
   the CloudWatch error code: InvalidParameterValue, MissingParameter,
   InvalidParameterCombination) or -TY_EREDIS. */
int cloudwatch_list_metrics(struct store *s, json_t *in, double now, json_t **out,
                            struct ty_err *err);
int cloudwatch_get_metric_statistics(struct store *s, json_t *in, json_t **out, struct ty_err *err);
int cloudwatch_get_metric_data(struct store *s, json_t *in, json_t **out, struct ty_err *err);
/* PutMetricData: every MetricData entry is validated before any is written (no output). */
int cloudwatch_put_metric_data(struct store *s, json_t *in, double now, struct ty_err *err);

#endif
