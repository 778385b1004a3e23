/*
 * run_logs.c - a container's log reader thread: engine log lines -> the job's CloudWatch Logs
 * stream (batched appends), MetricDefinitions matched on each line -> metric points (the
 * SageMaker metrics store), and the flushes the runner asks for.
 *
 * Owns the reader thread (run__logs_thread) and struct run_logs' batch and pending points.
 * Does not own the outbox (run_status.c): a batch Redis refused stays in l->batch with
 * l->spill set, for the runner to move. Threads: the reader takes l->mu for every append;
 * the runner flushes under the same mutex.
 */
#include "run_int.h"

#include "metricdefs.h"
#include "ty_log.h"

#include <string.h>
#include <unistd.h>

#define RUN_BATCH_EVENTS   500
#define RUN_BATCH_BYTES    (512 * 1024)
#define RUN_BATCH_HARD_MAX 20000             /* events kept when Redis does not take them */
#define RUN_MPEND_MAX      20000             /* metric points kept likewise */
#define RUN_LINE_MAX       (256 * 1024 - 26) /* CloudWatch's event size limit */
#define RUN_LOGS_ENGINE_S  120 /* the log reader retries an unreachable engine this long */

/* ---- log reader ---- */

void run__logs_unref(struct run_logs *l)
{
    if (!l || atomic_fetch_sub(&l->refs, 1) != 1)
        return;
    json_decref(l->batch);
    json_decref(l->mpend);
    metricdefs_free(l->metrics);
    free(l->redis_url);
    free(l->docker_host);
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l);
}

/* Moves the points matched so far into l->mpend ([[def, ts, seq, value], ...]), keeping at
   most RUN_MPEND_MAX (the oldest go). Call with l->mu held. */
void run__metrics_collect(struct run_logs *l)
{
    struct metricdefs_point pts[256];
    size_t n;

    if (!l->metrics || !l->mpend)
        return;
    while ((n = metricdefs_take(l->metrics, pts, 256)) > 0) {
        for (size_t i = 0; i < n; i++)
            json_array_append_new(l->mpend,
                                  json_pack("[i, I, I, f]", pts[i].def, (json_int_t)pts[i].ts_ms,
                                            (json_int_t)pts[i].seq, pts[i].value));
    }
    while (json_array_size(l->mpend) > RUN_MPEND_MAX) {
        json_array_remove(l->mpend, 0);
        l->dropped++;
    }
}

/* The series dimension of l: Host = <job>/algo-N. new: [{"Name":"Host","Value":...}]. */
json_t *run__metrics_dims(const struct run_logs *l)
{
    char host[128];
    size_t hl;

    snprintf(host, sizeof(host), "%s", l->stream); /* <job>/algo-N-<epoch> -> <job>/algo-N */
    hl = strlen(host);
    while (hl > 0 && host[hl - 1] >= '0' && host[hl - 1] <= '9')
        hl--;
    if (hl > 0 && host[hl - 1] == '-')
        host[hl - 1] = '\0';
    return json_pack("[{s:s,s:s}]", "Name", "Host", "Value", host);
}

/* The second series of every point: dimension TrainingJobName = <job>, what the SDK's
   TrainingJobAnalytics asks for (every host's points in one series). new. */
json_t *run__metrics_job_dims(const struct run_logs *l)
{
    return json_pack("[{s:s,s:s}]", "Name", "TrainingJobName", "Value", l->job);
}

/* Rewrites p[0..k)'s seq for the TrainingJobName series, where the hosts' points meet:
   seq * 1000 + N for host algo-N. */
void run__metrics_job_seq(const struct run_logs *l, struct store_metric_point *p, size_t k)
{
    const char *dash = strrchr(l->stream, '/');
    long hostno = 1;
    if (dash && strncmp(dash + 1, "algo-", 5) == 0)
        hostno = strtol(dash + 6, NULL, 10);
    for (size_t i = 0; i < k; i++)
        p[i].seq = p[i].seq * 1000 + hostno;
}

/* OUT: p[<= max] = the pending points of definition def from index *from on (advanced). */
size_t run__metrics_of(struct run_logs *l, int def, size_t *from, struct store_metric_point *p,
                       size_t max)
{
    size_t k = 0;

    for (; *from < json_array_size(l->mpend) && k < max; (*from)++) {
        json_t *e = json_array_get(l->mpend, *from);
        if (json_integer_value(json_array_get(e, 0)) != def)
            continue;
        p[k++] = (struct store_metric_point){json_integer_value(json_array_get(e, 1)),
                                             (long)json_integer_value(json_array_get(e, 2)),
                                             json_number_value(json_array_get(e, 3))};
    }
    return k;
}

/* Hands the MetricDefinitions points matched so far to their CloudWatch series in namespace
   /aws/sagemaker/TrainingJobs, dimension Host = <job>/algo-N (store_metrics.h). What Redis
   refuses stays pending (l->spill set: the runner moves it into the outbox); putting a point
   twice is harmless (its member is its ts, seq and value). Call with l->mu held. */
static void run_metrics_push(struct run_logs *l, struct store *s)
{
    struct store_metric_point sp[256];
    json_t *dims, *jdims;
    int failed = 0;

    run__metrics_collect(l);
    if (json_array_size(l->mpend) == 0 || !(dims = run__metrics_dims(l)))
        return;
    if (!(jdims = run__metrics_job_dims(l))) {
        json_decref(dims);
        return;
    }
    for (int def = 0; def < metricdefs_count(l->metrics) && !failed; def++) {
        size_t from = 0, k;
        while (!failed && (k = run__metrics_of(l, def, &from, sp, 256)) > 0) {
            struct ty_err err;
            int rc =
                store_metrics_put(s, STORE_METRICS_NS_SAGEMAKER, metricdefs_name(l->metrics, def),
                                  dims, sp, k, (int64_t)ty_wall_ms(), &err);
            if (rc == 0) {
                run__metrics_job_seq(l, sp, k);
                rc = store_metrics_put(s, STORE_METRICS_NS_SAGEMAKER,
                                       metricdefs_name(l->metrics, def), jdims, sp, k,
                                       (int64_t)ty_wall_ms(), &err);
            }
            if (rc != 0) {
                ty_log(TY_LOG_WARN, "agent.metrics.put_failed", "job=%s metric='%s' error='%s'",
                       l->job, metricdefs_name(l->metrics, def), err.msg);
                failed = 1;
            }
        }
    }
    json_decref(dims);
    json_decref(jdims);
    if (failed)
        atomic_store(&l->spill, 1);
    else
        json_array_clear(l->mpend);
}

/* Appends the pending batch with s (may be NULL: kept for later). Call with l->mu held. */
static void run_logs_flush_locked(struct run_logs *l, struct store *s)
{
    struct ty_err err;

    if (s && l->metrics)
        run_metrics_push(l, s);
    if (!l->batch || json_array_size(l->batch) == 0 || !s)
        goto bound;
    if (store_log_append(s, RUN_LOG_GROUP, l->stream, l->batch, &err) == 0) {
        json_array_clear(l->batch);
        l->batch_bytes = 0;
        return;
    }
    ty_log(TY_LOG_WARN, "agent.logs.append_failed", "job=%s stream='%s' error='%s'", l->job,
           l->stream, err.msg);
    atomic_store(&l->spill, 1);
bound:
    /* Keep memory bounded while Redis is away: drop the oldest events. */
    while (l->batch && json_array_size(l->batch) > RUN_BATCH_HARD_MAX) {
        json_array_remove(l->batch, 0);
        l->dropped++;
    }
}

void run__logs_flush(struct run_logs *l, struct store *s)
{
    pthread_mutex_lock(&l->mu);
    run_logs_flush_locked(l, s);
    pthread_mutex_unlock(&l->mu);
}

int run__logs_room(struct run_logs *l, size_t n)
{
    int room;

    pthread_mutex_lock(&l->mu);
    room = json_array_size(l->batch) + n <= RUN_BATCH_HARD_MAX / 2;
    pthread_mutex_unlock(&l->mu);
    return room;
}

int run__logs_add(struct run_logs *l, const char *text, int64_t ts_ms)
{
    size_t len = strlen(text);
    char *line;
    json_t *ev;

    if (len > RUN_LINE_MAX)
        len = RUN_LINE_MAX;
    if (!(line = malloc(len + 1)))
        return -1;
    memcpy(line, text, len);
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == '\n'))
        len--;
    line[len] = '\0';
    stage_utf8_fix(line, len);
    if (ts_ms <= 0)
        ts_ms = (int64_t)ty_wall_ms();
    pthread_mutex_lock(&l->mu);
    if (ts_ms < l->last_ts)
        ts_ms = l->last_ts;
    l->last_ts = ts_ms;
    metricdefs_feed(l->metrics, line, len, ts_ms);
    ev = json_pack("{s:I, s:s%}", "timestamp", (json_int_t)ts_ms, "message", line, len);
    if (ev && json_array_append_new(l->batch, ev) == 0)
        l->batch_bytes += len + 26;
    pthread_mutex_unlock(&l->mu);
    free(line);
    return ev ? 0 : -1;
}

struct run_reader {
    struct run_logs *l;
    struct store *s; /* the reader's own connection, may be NULL */
    char *line;      /* RUN_LINE_MAX + 1 bytes of scratch */
    long seen;       /* lines the engine has delivered so far in this pass */
    long kept;       /* lines already appended: a later pass skips that many */
    long fed;        /* lines already matched against the MetricDefinitions */
};

static int run_logs_line(const char *line, size_t len, int64_t ts_ms, int is_stderr, void *ud)
{
    struct run_reader *rd = ud;
    struct run_logs *l = rd->l;
    long idx = rd->seen++;
    json_t *ev;

    (void)is_stderr;
    if (idx < rd->kept && idx < rd->fed)
        return atomic_load(&l->abandon) ? 1 : 0; /* delivered by an earlier pass */
    if (len > RUN_LINE_MAX)
        len = RUN_LINE_MAX;
    memcpy(rd->line, line, len);
    while (len > 0 && (rd->line[len - 1] == '\r' || rd->line[len - 1] == '\n'))
        len--;
    rd->line[len] = '\0';
    stage_utf8_fix(rd->line, len);
    if (ts_ms <= 0)
        ts_ms = (int64_t)ty_wall_ms();
    pthread_mutex_lock(&l->mu);
    /* Engines stamp lines with whole seconds (Podman) and the agent's own lines come first:
       keep the stream chronological, as CloudWatch and the SDK's tailing (startTime = the last
       timestamp seen) need. */
    if (ts_ms < l->last_ts)
        ts_ms = l->last_ts;
    l->last_ts = ts_ms;
    pthread_mutex_unlock(&l->mu);
    if (idx >= rd->fed) {
        metricdefs_feed(l->metrics, rd->line, len, ts_ms);
        rd->fed = idx + 1;
    }
    if (idx < rd->kept)
        return atomic_load(&l->abandon) ? 1 : 0; /* in the stream already */
    rd->kept++;
    ev = json_pack("{s:I, s:s%}", "timestamp", (json_int_t)ts_ms, "message", rd->line, len);
    pthread_mutex_lock(&l->mu);
    if (ev && json_array_append_new(l->batch, ev) == 0)
        l->batch_bytes += len + 26;
    if (json_array_size(l->batch) >= RUN_BATCH_EVENTS || l->batch_bytes >= RUN_BATCH_BYTES)
        run_logs_flush_locked(l, atomic_load(&l->spill) ? NULL : rd->s);
    pthread_mutex_unlock(&l->mu);
    return atomic_load(&l->abandon) ? 1 : 0;
}

/*
 * Reads the container's log file by position (docker_logfile_*) until the container has exited
 * and the file has nothing more: every line once, in the order it was written, partial records
 * joined. l->skip lines (kept by an earlier agent) are skipped by count, which the file's fixed
 * order makes exact. Returns 0 when it read the log to its end (or was abandoned), -1 when the
 * file cannot be read here (another host's engine, another log driver): the caller then reads
 * the logs API.
 */
static int run_logs_from_file(struct run_logs *l, struct run_reader *rd, struct docker *d)
{
    struct docker_state st;
    struct docker_logfile *f;
    struct ty_err err;
    int quiet = 0, exited = 0;
    double next_inspect = 0;

    memset(&st, 0, sizeof(st));
    if (docker_inspect(d, l->container, &st, &err) != 0 || !st.log_path[0])
        return -1;
    if (!(f = docker_logfile_open(st.log_path, RUN_LINE_MAX, &err))) {
        ty_log(TY_LOG_INFO, "agent.logs.file", "job=%s path='%s' error='%s' reader=api", l->job,
               st.log_path, err.msg);
        return -1;
    }
    rd->seen = 0;
    while (!atomic_load(&l->abandon)) {
        long n = docker_logfile_read(f, run_logs_line, rd, &err);
        if (n < 0) {
            ty_log(TY_LOG_WARN, "agent.logs.read_failed", "job=%s path='%s' error='%s'", l->job,
                   st.log_path, err.msg);
            break;
        }
        if (n > 0) {
            quiet = 0;
            continue;
        }
        /* nothing new: done once the container has exited and two reads 100 ms apart after
           that found nothing (the engine writes what it drained from the pipes first) */
        if (exited && ++quiet >= 2)
            break;
        if (!exited && ty_wall_s() >= next_inspect) { /* the engine asked twice a second */
            int irc = docker_inspect(d, l->container, &st, &err);
            exited = irc == -TY_ENOTFOUND || (irc == 0 && !st.running);
            next_inspect = ty_wall_s() + 0.5;
        }
        usleep(100 * 1000);
    }
    if (!atomic_load(&l->abandon))
        docker_logfile_finish(f, run_logs_line, rd);
    ty_log(TY_LOG_INFO, "agent.logs.file_done", "job=%s lines=%ld bytes=%llu", l->job, rd->seen,
           (unsigned long long)docker_logfile_offset(f));
    docker_logfile_close(f);
    return 0;
}

void *run__logs_thread(void *arg)
{
    struct run_logs *l = arg;
    struct run_reader rd = {.l = l, .kept = l->skip};
    struct docker *d;
    struct ty_err err;
    double engine_deadline = 0;

    rd.s = store_open(l->redis_url, &err);
    if (!rd.s)
        ty_log(TY_LOG_WARN, "agent.logs.store", "job=%s error='%s'", l->job, err.msg);
    else
        store_set_identity(rd.s, l->region, l->account[0] ? l->account : NULL);
    rd.line = malloc(RUN_LINE_MAX + 1);
    d = docker_open(l->docker_host, &err);
    if (d && rd.line && run_logs_from_file(l, &rd, d) == 0) {
        /* read by position, to the end */
    } else if (d && rd.line) {
        /* The engine may end a follow stream before it has sent every line (Podman does so
           when the container exits while it reads): after each pass, read again from the
           start, skipping the lines already kept, until the container has exited and a
           non-following pass has delivered the rest. */
        for (int pass = 0; pass < 50 && !atomic_load(&l->abandon);) {
            struct docker_state st;
            int exited, irc;
            memset(&st, 0, sizeof(st));
            irc = docker_inspect(d, l->container, &st, &err);
            exited = irc != 0 || !st.running;
            rd.seen = 0;
            if (docker_logs(d, l->container, !exited, 0, run_logs_line, &rd, &err) != 0) {
                if (atomic_load(&l->abandon))
                    break;
                ty_log(TY_LOG_WARN, "agent.logs.read_failed", "job=%s error='%s'", l->job, err.msg);
                /* The engine's service may be restarting while the container goes on: read
                   again (skipping what was kept) once it answers, for a bounded time. */
                if (irc == -TY_ENOTFOUND)
                    break;
                if (engine_deadline == 0)
                    engine_deadline = ty_wall_s() + RUN_LOGS_ENGINE_S;
                if (ty_wall_s() >= engine_deadline)
                    break;
                sleep(1);
                continue;
            }
            engine_deadline = 0;
            if (exited)
                break;
            pass++;
        }
    } else {
        ty_log(TY_LOG_WARN, "agent.logs.engine", "job=%s error='%s'", l->job,
               d ? "out of memory" : err.msg);
    }
    docker_close(d);
    pthread_mutex_lock(&l->mu);
    run_logs_flush_locked(l, atomic_load(&l->spill) ? NULL : rd.s);
    l->done = 1;
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
    store_close(rd.s);
    free(rd.line);
    run__logs_unref(l);
    return NULL;
}
