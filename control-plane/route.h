/*
 * route.h - request dispatch: health, SigV4 authentication, protocol and operation lookup,
 * validation, and the one place where a ty_err becomes a wire error.
 *
 * Owns: the operation table (service, operation, handler), the JSON 1.1 and REST-alias
 * framing, and each worker thread's Redis connection (opened on first use).
 */
#ifndef TY_CP_ROUTE_H
#define TY_CP_ROUTE_H

#include <stddef.h>

#include "http.h"
#include "model.h"
#include "ops/ops.h"

struct agent;
struct s3c_config;

struct route_ctx {
    const struct model *model; /* borrowed */
    const char *redis_url;
    const char *docker_host; /* NULL when the server runs no agents */
    const char *account_id;
    struct agent **agents; /* embedded agents, for /healthz */
    int nagents;
    const char *s3_dir;                 /* the embedded object store's directory (objstore.h) */
    const struct s3c_config *s3_remote; /* the external store (--s3-endpoint), NULL when none */
    const char *region;                 /* --region: what the console's calls are scoped to */
    const char *metrics_token;          /* bearer token GET /metrics needs; NULL/"": none */
};

/* The operation table, for tests (every operation must have an authz.c row): the number of
   operations, and the name (borrowed, static) and OUT: *service of the i-th; NULL past the end. */
size_t route_op_count(void);
const char *route_op_at(size_t i, const char **service);

/* The handler of service/op in the operation table, or NULL (the console calls handlers as
   route_handle does). */
op_fn route_op_find(const char *service, const char *op);

/* The http_handler of trainyard-server; ud is a struct route_ctx that outlives the server. */
void route_handle(struct http_request *req, struct http_response *resp, void *ud);

#endif
