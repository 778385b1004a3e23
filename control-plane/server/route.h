/*
 * route.h - request dispatch: a table of front ends, each a {match, serve} pair tried in order
 * (health, metrics, the container credentials endpoint, S3, STS, CloudWatch, the console, IAM,
 * then SageMaker and CloudWatch Logs over JSON), and for the JSON services the operation
 * lookup, validation, and the one place where a ty_err becomes a JSON wire error.
 *
 * Owns: the front-end table, the operation table (service, operation, handler), the JSON 1.1
 * and REST-alias framing. Every front end authenticates with one auth_request call (auth.h)
 * on the worker's one Redis connection (worker.h).
 * Does not own: the engine or the agents (server.c hands /healthz and /metrics their state
 * through struct front_engine, front_ctx.h).
 */
#ifndef TY_CP_ROUTE_H
#define TY_CP_ROUTE_H

#include <jansson.h>
#include <stddef.h>

#include "front_ctx.h"
#include "http.h"

/* The http_handler of trainyard-server; ud is a struct front_ctx that outlives the server. */
void route_handle(struct http_request *req, struct http_response *resp, void *ud);

#endif
