/*
 * metrics_scrape.h - GET /metrics: the Prometheus text page (format 0.0.4) of one server.
 *
 * Owns: the bearer-token check (--metrics-token), and the gauges read at scrape time from
 * Redis, the queue and the engine: trainyard_up, trainyard_redis_up, trainyard_engine_up,
 * trainyard_queue_depth, trainyard_training_jobs{status}, trainyard_agents_live,
 * trainyard_agent_slots{agent} and trainyard_agent_slots_busy{agent}; the request series come
 * from metrics.c. Does not own the connections it is handed.
 * Thread-safety: reentrant (the caller's per-thread store; eng->ping may run concurrently).
 */
#ifndef TY_CP_METRICS_SCRAPE_H
#define TY_CP_METRICS_SCRAPE_H

#include "http.h"

#include <stddef.h>

struct store;

/* The engine as the scrape sees it: ping returns 1 when the engine answers (else 0, why
   written, size n). */
struct metrics_scrape_engine {
    int (*ping)(void *ud, char *why, size_t n);
    void *ud;
};

/* The token server.c hands the router when the server listens beyond loopback and no
   --metrics-token is set: every scrape is refused (403) until a token is set. Compared by
   value (metrics_scrape_off); a token given on the command line never starts with '\1'. */
#define METRICS_TOKEN_OFF "\1off"

/* 1 when listen ("HOST:PORT", "[HOST]:PORT") names a loopback host only: 127.0.0.0/8, ::1,
   localhost. 0 for anything else, including 0.0.0.0, "" and [::]. */
int metrics_listen_loopback(const char *listen);

/*
 * Answers req into resp: 403 when token is METRICS_TOKEN_OFF; 401 with WWW-Authenticate when token
 * is set and the request's "Authorization: Bearer <token>" is not it (compared in constant time);
 * else 200 text/plain version 0.0.4. s (the thread's store, NULL when Redis is unreachable) and eng
 * (NULL when this server runs no agents) are borrowed; the engine is pinged only for an authorised
 * scrape.
 */
void metrics_scrape(struct http_request *req, struct http_response *resp, const char *token,
                    struct store *s, const struct metrics_scrape_engine *eng);

#endif
