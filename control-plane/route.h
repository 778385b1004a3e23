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
 * through struct route_engine).
 */
#ifndef TY_CP_ROUTE_H
#define TY_CP_ROUTE_H

#include <jansson.h>
#include <stddef.h>

#include "http.h"
#include "model.h"
#include "ops/ops.h"

struct s3c_config;

/*
 * What /healthz and /metrics know of the container engine and the embedded agents, supplied
 * by server.c. Every callback runs on a worker thread, concurrently with others.
 */
struct route_engine {
    const char *host; /* the engine's address; NULL when this server runs no agents */
    int nagents;      /* agents embedded in this server */
    /* 1 when the engine answers; 0 with why (size n) when not. NULL when host is NULL. */
    int (*ping)(void *ud, char *why, size_t n);
    /* new (caller decrefs): a JSON array of the embedded agents' status objects. */
    json_t *(*agents)(void *ud);
    void *ud;
};

struct route_ctx {
    const struct model *model; /* borrowed */
    const char *redis_url;
    const char *account_id;
    const struct route_engine *engine;  /* borrowed; NULL: no engine, no embedded agents */
    const char *s3_dir;                 /* the embedded object store's directory (objstore.h) */
    const struct s3c_config *s3_remote; /* the external store (--s3-endpoint), NULL when none */
    const char *region;                 /* --region: the one region served; every signature's
                                           scope names it, ARNs and aws:RequestedRegion use it */
    const char *metrics_token;          /* bearer token GET /metrics needs; NULL/"": none */
};

/* The http_handler of trainyard-server; ud is a struct route_ctx that outlives the server. */
void route_handle(struct http_request *req, struct http_response *resp, void *ud);

#endif
