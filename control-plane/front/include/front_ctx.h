/*
 * front_ctx.h - what every front end (S3, STS, CloudWatch, IAM, the JSON services, the
 * console) knows of the deployment it serves: the service model, the account, the one region,
 * the object stores, the metrics token, and the engine and embedded agents that /healthz and
 * /metrics report on.
 *
 * Owns: the two structs only. server.c fills them once at start; they outlive the HTTP server,
 * and every front end borrows them read-only from any worker thread.
 */
#ifndef TY_CP_FRONT_CTX_H
#define TY_CP_FRONT_CTX_H

#include <jansson.h>
#include <stddef.h>

struct apimodel;
struct s3c_config;

/*
 * What /healthz and /metrics know of the container engine and the embedded agents, supplied
 * by server.c. Every callback runs on a worker thread, concurrently with others.
 */
struct front_engine {
    const char *host; /* the engine's address; NULL when this server runs no agents */
    int nagents;      /* agents embedded in this server */
    /* 1 when the engine answers; 0 with why (size n) when not. NULL when host is NULL. */
    int (*ping)(void *ud, char *why, size_t n);
    /* new (caller decrefs): a JSON array of the embedded agents' status objects. */
    json_t *(*agents)(void *ud);
    void *ud;
};

struct front_ctx {
    const struct apimodel *model; /* borrowed */
    const char *redis_url;
    const char *account_id;
    const struct front_engine *engine;  /* borrowed; NULL: no engine, no embedded agents */
    const char *s3_dir;                 /* the embedded object store's directory (objstore.h) */
    const struct s3c_config *s3_remote; /* the external store (--s3-endpoint), NULL when none */
    const char *region;                 /* --region: the one region served; every signature's
                                           scope names it, ARNs and aws:RequestedRegion use it */
    const char *metrics_token;          /* bearer token GET /metrics needs; NULL/"": none */
    int s3_orphan_age_s; /* --s3-orphan-age: what no upload owns goes when this old (objstore.h) */
};

#endif
