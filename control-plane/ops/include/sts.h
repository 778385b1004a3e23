/*
 * sts.h - STS (query protocol, XML) on trainyard's one port: GetCallerIdentity.
 *
 * Owns: recognising STS requests (SigV4 credential scope service "sts", header or presigned
 * query), their auth (principals in store.h) and STS's XML answers and errors, which botocore's
 * query parser reads (<ErrorResponse><Error><Code>...). Thread-safety: one Redis connection per
 * worker thread.
 */
#ifndef TY_CP_OPS_STS_H
#define TY_CP_OPS_STS_H

#include "front_ctx.h"
#include "http.h"

/* 1 when req is signed for the sts service. */
int sts_is_request(const struct http_request *req);

/* Serves one STS request whole into resp. */
void sts_route(struct http_request *req, struct http_response *resp, const struct front_ctx *rc);

#endif
