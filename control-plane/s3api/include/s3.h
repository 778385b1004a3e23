/*
 * s3.h - the S3 REST API on trainyard's one port (path-style and <bucket>.localhost /
 * <bucket>.s3.* virtual-host style), over the embedded object store (objstore.h).
 *
 * Owns: recognising S3 requests, their SigV4 check (header, presigned query, signed aws-chunked
 * bodies), the operations, and S3's XML bodies and errors (Code/Message/Resource/RequestId;
 * HEAD errors carry no body). Does not own principals (store.h) or the HTTP server (http.c).
 * Thread-safety: each worker thread keeps its own Redis connection and objstore handle.
 */
#ifndef TY_CP_OPS_S3_H
#define TY_CP_OPS_S3_H

#include "front_ctx.h"
#include "http.h"

/* 1 when req is for S3: SigV4 scope service "s3" (header or query), or unsigned with no
   X-Amz-Target and a path outside /healthz, /metrics, /sagemaker/, /console/ and POST /. */
int s3_is_request(const struct http_request *req);

/* The http_prepare hook (ud: struct front_ctx): streams S3 PUT bodies to a temp file. */
void s3_prepare(struct http_request *req, void *ud);

/* Serves one S3 request whole (auth included) into resp. */
void s3_route(struct http_request *req, struct http_response *resp, const struct front_ctx *rc);

#endif
