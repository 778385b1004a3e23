/*
 * metrics_scrape.c - the /metrics page (metrics_scrape.h): token check, gauges read at scrape
 * time, then metrics.c's request series. A gauge whose source cannot answer is left out, and
 * its *_up gauge says 0.
 */
#include "metrics_scrape.h"

#include "metrics.h"
#include "queue.h"
#include "store.h"

#include <arpa/inet.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define METRICS_SCRAPE_MAX (4 * 1024 * 1024)

/* 1 when the Authorization header is "Bearer <token>". */
static int metrics_scrape_authorized(const struct http_request *req, const char *token)
{
    const char *h = http_header(req, "Authorization");
    size_t tl = strlen(token);
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return 0;
    h += 7;
    while (*h == ' ')
        h++;
    return strlen(h) == tl && CRYPTO_memcmp(h, token, tl) == 0;
}

static const char *metrics_scrape_id(json_t *agent)
{
    const char *id = json_string_value(json_object_get(agent, "id"));
    return id ? id : "";
}

static void metrics_scrape_gauges(struct ty_buf *b, struct store *s,
                                  const struct metrics_scrape_engine *eng)
{
    static const char *const statuses[] = {"InProgress", "Completed", "Failed",
                                           "Stopping",   "Stopped",   "Deleting"};
    struct ty_err err;
    int redis_up;
    json_t *agents = NULL, *a;
    size_t i;

    ty_err_clear(&err);
    redis_up = s && store_ping(s, &err) == 0;
    ty_buf_puts(b, "# HELP trainyard_up The server answers.\n# TYPE trainyard_up gauge\n"
                   "trainyard_up 1\n");
    ty_buf_printf(b,
                  "# HELP trainyard_redis_up Redis answers PING.\n"
                  "# TYPE trainyard_redis_up gauge\ntrainyard_redis_up %d\n",
                  redis_up);
    if (eng && eng->ping) {
        char why[256];
        ty_buf_printf(b,
                      "# HELP trainyard_engine_up The container engine answers.\n"
                      "# TYPE trainyard_engine_up gauge\ntrainyard_engine_up %d\n",
                      eng->ping(eng->ud, why, sizeof(why)) == 1);
    }
    if (!redis_up)
        return;
    {
        long depth = queue_depth(s, &err);
        if (depth >= 0)
            ty_buf_printf(b,
                          "# HELP trainyard_queue_depth Training jobs queued or pending on an "
                          "agent.\n# TYPE trainyard_queue_depth gauge\ntrainyard_queue_depth "
                          "%ld\n",
                          depth);
    }
    ty_buf_puts(b, "# HELP trainyard_training_jobs Training jobs by TrainingJobStatus.\n"
                   "# TYPE trainyard_training_jobs gauge\n");
    for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++) {
        long n = store_job_count(s, statuses[i], &err);
        if (n >= 0)
            ty_buf_printf(b, "trainyard_training_jobs{status=\"%s\"} %ld\n", statuses[i], n);
    }
    agents = queue_agents(s, &err);
    if (!agents)
        return;
    ty_buf_printf(b,
                  "# HELP trainyard_agents_live Agents with a live heartbeat.\n"
                  "# TYPE trainyard_agents_live gauge\ntrainyard_agents_live %zu\n",
                  json_array_size(agents));
    ty_buf_puts(b, "# HELP trainyard_agent_slots Job slots of each live agent.\n"
                   "# TYPE trainyard_agent_slots gauge\n");
    json_array_foreach(agents, i, a)
    {
        ty_buf_puts(b, "trainyard_agent_slots{agent=\"");
        metrics_label(b, metrics_scrape_id(a));
        ty_buf_printf(b, "\"} %lld\n", (long long)json_integer_value(json_object_get(a, "slots")));
    }
    ty_buf_puts(b, "# HELP trainyard_agent_slots_busy Job slots in use on each live agent.\n"
                   "# TYPE trainyard_agent_slots_busy gauge\n");
    json_array_foreach(agents, i, a)
    {
        ty_buf_puts(b, "trainyard_agent_slots_busy{agent=\"");
        metrics_label(b, metrics_scrape_id(a));
        ty_buf_printf(b, "\"} %lld\n", (long long)json_integer_value(json_object_get(a, "busy")));
    }
    json_decref(agents);
}

int metrics_listen_loopback(const char *listen)
{
    char host[256];
    const char *p = listen, *end;
    size_t n;
    struct in_addr a4;

    if (!p || !*p)
        return 0;
    if (*p == '[') {
        end = strchr(p, ']');
        if (!end)
            return 0;
        p++;
    } else {
        end = strrchr(p, ':');
        if (!end)
            end = p + strlen(p);
    }
    n = (size_t)(end - p);
    if (n == 0 || n >= sizeof(host))
        return 0;
    memcpy(host, p, n);
    host[n] = '\0';
    if (strcasecmp(host, "localhost") == 0 || strcmp(host, "::1") == 0)
        return 1;
    return inet_pton(AF_INET, host, &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
}

void metrics_scrape(struct http_request *req, struct http_response *resp, const char *token,
                    struct store *s, const struct metrics_scrape_engine *eng)
{
    struct ty_buf b;
    static const char unauth[] = "unauthorized: /metrics needs 'Authorization: Bearer <token>'\n";

    req->metric_service = "trainyard";
    req->metric_op = "Metrics";
    if (token && strcmp(token, METRICS_TOKEN_OFF) == 0) {
        static const char off[] = "forbidden: /metrics is off: this server listens beyond loopback "
                                  "and no --metrics-token is set\n";
        resp->status = 403;
        resp->content_type = "text/plain; charset=utf-8";
        resp->body = strdup(off);
        resp->len = resp->body ? strlen(resp->body) : 0;
        return;
    }
    if (token && *token && !metrics_scrape_authorized(req, token)) {
        resp->status = 401;
        resp->content_type = "text/plain; charset=utf-8";
        resp->body = strdup(unauth);
        resp->len = resp->body ? strlen(resp->body) : 0;
        http_response_header(resp, "WWW-Authenticate", "Bearer realm=\"trainyard metrics\"");
        return;
    }
    ty_buf_init(&b, METRICS_SCRAPE_MAX);
    metrics_scrape_gauges(&b, s, eng);
    metrics_render_requests(&b);
    resp->status = 200;
    resp->content_type = "text/plain; version=0.0.4; charset=utf-8";
    resp->len = b.len;
    resp->body = ty_buf_steal(&b);
    if (!resp->body) {
        resp->status = 500;
        resp->len = 0;
    }
}
