/*
 * agent.c - the training agent's lifecycle: start-up checks, runtime image import, the
 * heartbeat, the claim loop (its own unfinished entries, then dead agents', then new ones: a
 * state machine, struct claim_state) and stop.
 *
 * Owns: struct agent, the claim and heartbeat threads and the list of runner threads.
 * Does not own a job's run (run/run.c). Threads: claim loop and heartbeat each hold their own
 * store connection; agent_start/agent_stop/agent_status are called from the owner's thread.
 */
#include "agent.h"

#include "agent_int.h"
#include "docker.h"
#include "gpumetrics.h"
#include "leftover.h"
#include "outbox.h"
#include "queue.h"
#include "seccomp.h"
#include "slurmx.h"
#include "spare.h"
#include "stage.h"
#include "store.h"
#include "ty_log.h"
#include "ty_time.h"
#include "volume.h"
#include "warmpool.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef TY_VERSION
#define TY_VERSION "0.0.0"
#endif

#define AGENT_CLAIM_BLOCK_MS 1000
#define AGENT_RECHECK_MS     250 /* a look again while a job waits for room (ledger.h) */
#define AGENT_PICK_WINDOW    64  /* waiting entries one look considers, in fair-share order */
#define AGENT_TOTAL_S        2.0 /* how long the live agents' total capacity is reused */
#define AGENT_ENDED_POLL_MS  20  /* while a job waits: how soon a runner's end is seen */
#define AGENT_DEFAULT_TTL_S  10
#define AGENT_DEFAULT_GRACE  120
#define AGENT_OWN_RESCAN_S   30 /* period of the look for own entries no runner holds */
#define AGENT_LEFTOVER_S     15 /* period of the look for dead agents' leftovers (leftover.h) */

/* Waits up to ms on a->cv; with until_end, also until a->runs_ended leaves ended. 1 when the
   agent stops, else 0. */
static int agent_wait(struct agent *a, int ms, int until_end, unsigned long ended)
{
    struct timespec ts;
    int stopping;

    ty_deadline_ms(&ts, ms);
    pthread_mutex_lock(&a->mu);
    while (!atomic_load(&a->stopping) && !(until_end && atomic_load(&a->runs_ended) != ended)) {
        if (pthread_cond_timedwait(&a->cv, &a->mu, &ts) == ETIMEDOUT)
            break;
    }
    stopping = atomic_load(&a->stopping);
    pthread_mutex_unlock(&a->mu);
    return stopping ? 1 : 0;
}

int agent__sleep(struct agent *a, int ms)
{
    return agent_wait(a, ms, 0, 0);
}

int agent__sleep_end(struct agent *a, int ms, unsigned long ended)
{
    return agent_wait(a, ms, 1, ended);
}

/* ---- host ---- */

static void agent_probe_host(struct agent *a)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    DIR *d;
    struct dirent *de;

    a->host_cpus = cpus > 0 ? (int)cpus : 1;
    a->host_memory = pages > 0 && psize > 0 ? (int64_t)pages * psize : 0;
    a->host_gpus = 0;
    if (a->cfg.gpu_devices) { /* declared by CDI name: the part after '=' is the DeviceID */
        for (const char *p = a->cfg.gpu_devices; p && a->host_gpus < AGENT_MAX_GPUS;) {
            const char *end = strchr(p, ','), *eq = strchr(p, '=');
            struct agent_gpu *g = &a->gpu_list[a->host_gpus++];
            int len = end ? (int)(end - p) : (int)strlen(p);
            snprintf(g->cdi, sizeof(g->cdi), "%.*s", len, p);
            snprintf(g->id, sizeof(g->id), "%.*s", len - (int)(eq + 1 - p), eq + 1);
            p = end ? end + 1 : NULL;
        }
    } else if (a->cfg.gpus != 0) {
        a->host_gpus = a->cfg.gpus > 0 ? a->cfg.gpus : 0;
    } else if ((d = opendir("/dev")) != NULL) {
        while ((de = readdir(d)) != NULL) {
            const char *n = de->d_name;
            if (strncmp(n, "nvidia", 6) == 0 && n[6] >= '0' && n[6] <= '9')
                a->host_gpus++;
        }
        closedir(d);
    }
    if (a->host_gpus > AGENT_MAX_GPUS)
        a->host_gpus = AGENT_MAX_GPUS;
    for (int i = 0; !a->cfg.gpu_devices && i < a->host_gpus; i++) {
        snprintf(a->gpu_list[i].cdi, sizeof(a->gpu_list[i].cdi), "nvidia.com/gpu=%d", i);
        snprintf(a->gpu_list[i].id, sizeof(a->gpu_list[i].id), "%d", i);
    }
    {
        double f = a->cfg.overcommit > 0 ? a->cfg.overcommit : 1.0;
        int ncpu = a->cfg.cpus > 0 ? a->cfg.cpus : a->host_cpus;
        int64_t mem = a->cfg.memory_bytes > 0 ? (int64_t)a->cfg.memory_bytes : a->host_memory;
        a->cap.gpus = a->host_gpus;
        a->cap.cpus = (int)(ncpu * f);
        a->cap.memory_bytes = (int64_t)((double)mem * f);
    }
}

/* Gives run the first n GPUs no other running run holds. Call with a->mu held. */
static void agent_gpus_take_locked(struct agent *a, struct agent_run *run, int n)
{
    uint64_t held = 0;

    for (struct agent_run *r = a->runs; r; r = r->next)
        held |= r->done || r == run ? 0 : r->gpu_mask;
    run->gpu_mask = 0;
    for (int i = 0; i < a->host_gpus && n > 0; i++) {
        if (!(held & ((uint64_t)1 << i))) {
            run->gpu_mask |= (uint64_t)1 << i;
            n--;
        }
    }
}

void agent__charge_set(struct agent *a, struct agent_run *run, const char *type, int count,
                       int take_gpus)
{
    struct ledger_res need;

    ledger_need(type, count, &need);
    pthread_mutex_lock(&a->mu);
    ledger_charge(&need, &a->cap, !a->cfg.no_cpu_fallback, &run->charge);
    if (take_gpus && run->charge.gpus > 0 && !run->gpu_mask)
        agent_gpus_take_locked(a, run, run->charge.gpus);
    pthread_mutex_unlock(&a->mu);
}

void agent__gpus_take(struct agent *a, struct agent_run *run)
{
    pthread_mutex_lock(&a->mu);
    if (run->charge.gpus > 0 && !run->gpu_mask)
        agent_gpus_take_locked(a, run, run->charge.gpus);
    pthread_mutex_unlock(&a->mu);
}

void agent__gpus_adopt(struct agent *a, struct agent_run *run, const char *names)
{
    char buf[256], *save = NULL, *tok;

    snprintf(buf, sizeof(buf), "%s", names ? names : "");
    pthread_mutex_lock(&a->mu);
    for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        for (int i = 0; i < a->host_gpus; i++) {
            uint64_t bit = (uint64_t)1 << i;
            if (strcmp(a->gpu_list[i].cdi, tok) != 0)
                continue;
            for (struct agent_run *o = a->runs; o; o = o->next)
                if (o != run && !o->done && (o->gpu_mask & bit))
                    ty_log(TY_LOG_WARN, "agent.gpus.shared", "job=%s other=%s gpu=%s",
                           run->item.job, o->item.job, tok);
            run->gpu_mask |= bit;
        }
    }
    pthread_mutex_unlock(&a->mu);
}

int agent__gpus_of(struct agent *a, struct agent_run *run, int host, int hosts, const char **cdi,
                   const char **ids)
{
    int per, k = 0, n = 0;

    pthread_mutex_lock(&a->mu);
    per = hosts > 0 ? run->charge.gpus / hosts : 0;
    for (int i = 0; per > 0 && i < a->host_gpus; i++) {
        if (!(run->gpu_mask & ((uint64_t)1 << i)))
            continue;
        if (k++ / per != host)
            continue;
        cdi[n] = a->gpu_list[i].cdi;
        ids[n++] = a->gpu_list[i].id;
    }
    pthread_mutex_unlock(&a->mu);
    cdi[n] = NULL;
    ids[n] = NULL;
    return n;
}

/* new: the CDI names of run's GPUs. Call with a->mu held. */
static json_t *agent_gpu_names_locked(struct agent *a, struct agent_run *run)
{
    json_t *names = json_array();

    for (int i = 0; names && i < a->host_gpus; i++)
        if (run->gpu_mask & ((uint64_t)1 << i))
            json_array_append_new(names, json_string(a->gpu_list[i].cdi));
    return names;
}

void agent__free_locked(struct agent *a, struct ledger_res *free)
{
    *free = a->cap;
    for (struct agent_run *r = a->runs; r; r = r->next) {
        if (r->done)
            continue;
        free->gpus -= r->charge.gpus;
        free->cpus -= r->charge.cpus;
        free->memory_bytes -= r->charge.memory_bytes;
    }
}

void agent__use_set(struct agent *a, struct agent_run *run, const struct agent_use *use)
{
    pthread_mutex_lock(&a->mu);
    run->use = *use;
    pthread_mutex_unlock(&a->mu);
}

/* Adds "in_use" (what the running jobs' containers were given, summed), "holding" (each
   job's share: job, principal (who created it), instance type, hosts, cpus, memory_bytes, gpus,
   volume_gb, and "charged", what the ledger holds for it), "capacity" and "free" (ledger.h) to out.
 */
static void agent_use_json(struct agent *a, json_t *out)
{
    json_t *holding = json_array();
    struct agent_use sum = {0};
    struct ledger_res free;

    pthread_mutex_lock(&a->mu);
    agent__free_locked(a, &free);
    for (struct agent_run *r = a->runs; r && holding; r = r->next) {
        const struct agent_use *u = &r->use;
        const struct ledger_res *c = &r->charge;
        if (r->done || (u->hosts == 0 && c->cpus == 0 && c->gpus == 0 && c->memory_bytes == 0))
            continue;
        sum.cpus += u->cpus;
        sum.memory_bytes += u->memory_bytes;
        sum.gpus += u->gpus;
        sum.volume_gb += u->volume_gb;
        json_array_append_new(
            holding,
            json_pack("{s:s, s:s, s:s, s:i, s:i, s:I, s:i, s:i, s:o, s:o}", "job", r->item.job,
                      "principal", r->item.principal, "instance_type", u->type, "hosts", u->hosts,
                      "cpus", u->cpus, "memory_bytes", (json_int_t)u->memory_bytes, "gpus", u->gpus,
                      "volume_gb", u->volume_gb, "charged", ledger_res_json(c), "gpu_devices",
                      agent_gpu_names_locked(a, r)));
    }
    pthread_mutex_unlock(&a->mu);
    json_object_set_new(out, "in_use",
                        json_pack("{s:i, s:I, s:i, s:i}", "cpus", sum.cpus, "memory_bytes",
                                  (json_int_t)sum.memory_bytes, "gpus", sum.gpus, "volume_gb",
                                  sum.volume_gb));
    json_object_set_new(out, "holding", holding ? holding : json_array());
    json_object_set_new(out, "capacity", ledger_res_json(&a->cap));
    json_object_set_new(out, "free", ledger_res_json(&free));
    json_object_set_new(out, "cpu_fallback", json_boolean(!a->cfg.no_cpu_fallback));
    json_object_set_new(out, "overcommit",
                        json_real(a->cfg.overcommit > 0 ? a->cfg.overcommit : 1.0));
}

static json_t *agent_capacity(struct agent *a)
{
    json_t *cap;
    int busy;

    pthread_mutex_lock(&a->mu);
    busy = a->busy;
    pthread_mutex_unlock(&a->mu);
    cap = json_pack("{s:i, s:I, s:i, s:i, s:i}", "cpus", a->host_cpus, "memory_bytes",
                    (json_int_t)a->host_memory, "gpus", a->host_gpus, "slots", a->cfg.slots, "busy",
                    busy);
    if (cap)
        agent_use_json(a, cap);
    return cap;
}

/* ---- threads ---- */

static void *agent_heartbeat_thread(void *arg)
{
    struct agent *a = arg;
    struct store *s = NULL;
    struct ty_err err;
    int period_ms = a->cfg.heartbeat_ttl_s * 1000 / 3;

    if (period_ms < 100)
        period_ms = 100;
    while (!atomic_load(&a->stopping)) {
        json_t *cap;
        if (!s)
            s = store_open(a->cfg.redis_url, &err);
        cap = agent_capacity(a);
        if (s && cap && queue_heartbeat(s, a->id, cap, a->cfg.heartbeat_ttl_s, &err) != 0) {
            ty_log(TY_LOG_WARN, "agent.heartbeat.failed", "agent=%s error='%s'", a->id, err.msg);
            store_close(s);
            s = NULL;
        } else if (!s) {
            ty_log(TY_LOG_WARN, "agent.heartbeat.failed", "agent=%s error='%s'", a->id, err.msg);
        }
        json_decref(cap);
        agent__sleep(a, period_ms);
    }
    store_close(s);
    return NULL;
}

/* Joins and frees runners that are done. Call with a->mu held. */
static void agent_reap_locked(struct agent *a)
{
    struct agent_run **pp = &a->runs;

    while (*pp) {
        struct agent_run *r = *pp;
        if (!r->done) {
            pp = &r->next;
            continue;
        }
        *pp = r->next;
        pthread_mutex_unlock(&a->mu);
        pthread_join(r->thr, NULL);
        free(r);
        pthread_mutex_lock(&a->mu);
        pp = &a->runs; /* the list may have changed meanwhile */
    }
}

/* Starts a runner for item, charged charge (NULL: nothing yet; agent__charge_set), failing
   the job with reason fail when not NULL. 0, or -1 (the entry stays pending for a reclaim). */
static int agent_spawn(struct agent *a, const struct queue_item *item, int reclaimed,
                       const struct ledger_res *charge, const char *fail)
{
    struct agent_run *r = calloc(1, sizeof(*r));

    if (!r)
        return -1;
    r->a = a;
    r->item = *item;
    r->reclaimed = reclaimed;
    if (fail)
        snprintf(r->fail, sizeof(r->fail), "%s", fail);
    pthread_mutex_lock(&a->mu);
    if (charge) {
        r->charge = *charge;
        if (charge->gpus > 0)
            agent_gpus_take_locked(a, r, charge->gpus);
    }
    a->busy++;
    if (pthread_create(&r->thr, NULL, run_thread, r) != 0) {
        a->busy--;
        pthread_mutex_unlock(&a->mu);
        free(r);
        return -1;
    }
    r->next = a->runs;
    a->runs = r;
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* 1 when a runner of this agent holds job (outbox_replay_all's skip). */
static int agent_job_running(const char *job, void *ud)
{
    struct agent *a = ud;
    int found = 0;

    pthread_mutex_lock(&a->mu);
    for (struct agent_run *r = a->runs; r && !found; r = r->next)
        found = strcmp(r->item.job, job) == 0;
    pthread_mutex_unlock(&a->mu);
    return found;
}

/* ---- the claim loop ---- */

/*
 * Where the claim loop looks for work. It starts with the entries this agent's id claimed and
 * left unfinished (CLAIM_OWN: an earlier run of this agent died); once that walk ends it
 * reclaims dead agents' entries, then claims new ones (CLAIM_QUEUE); every AGENT_OWN_RESCAN_S
 * it walks its own entries again (CLAIM_RESCAN), skipping those a runner here holds, for a
 * runner that gave up on Redis before its job ran. An own walk starts with a replay of the
 * outboxes nobody replays (outbox.h).
 */
enum claim_phase { CLAIM_OWN, CLAIM_RESCAN, CLAIM_QUEUE };

/* What one look found. */
enum claim_found {
    CLAIM_TOOK,   /* an entry: a runner started for it (or it was skipped); look again now */
    CLAIM_NONE,   /* nothing there: look at the next source */
    CLAIM_IDLE,   /* nothing anywhere: the claim waited its block out */
    CLAIM_FAILED, /* Redis failed (err) */
};

/* The claim thread's state. */
struct claim_state {
    enum claim_phase phase;
    char own_after[64];     /* the own walk's cursor: the last entry it saw, "" at its start */
    double next_own;        /* monotonic time at which CLAIM_QUEUE turns to CLAIM_RESCAN */
    int backoff_ms;         /* the wait after the next Redis failure */
    struct store *s;        /* owned; NULL before a connection and after a failure */
    struct agent *a;        /* borrowed: the agent this loop claims for */
    struct queue_res total; /* the live agents' capacity, fair share's whole (queue.h) */
    double total_at;        /* monotonic time total was read; 0 = never */
};

/* Waits out the backoff after a Redis failure and doubles it, up to 8 s. */
static void claim_backoff(struct agent *a, struct claim_state *st)
{
    agent__sleep(a, st->backoff_ms);
    st->backoff_ms = st->backoff_ms < 8000 ? st->backoff_ms * 2 : st->backoff_ms;
}

/* Starts a runner for item (agent_spawn); on failure waits a second (the entry stays
   pending). */
static void claim_spawn(struct agent *a, const struct queue_item *item, int reclaimed,
                        const struct ledger_res *charge, const char *fail)
{
    if (agent_spawn(a, item, reclaimed, charge, fail) != 0)
        agent__sleep(a, 1000);
}

/* volume_reap's keep: a volume under the staging root is kept while its job (named in
   <job dir>/job, run_volume.c) runs here or is InProgress or Stopping in the store; kept too
   when that cannot be told (no name, Redis away). */
/* The leftover sweep's own connections (agent_sweep_thread). */
struct sweep_state {
    struct agent *a;  /* borrowed */
    struct store *s;  /* owned; NULL before a connection and after a failure */
    struct docker *d; /* owned; likewise */
};

static int claim_volume_keep(const char *mp, void *ud)
{
    struct sweep_state *st = ud;
    struct agent *a = st->a;
    char path[4200], job[80];
    const char *slash = strrchr(mp, '/');
    struct ty_err err;
    json_t *doc;
    ssize_t n;
    int fd, keep;

    if (!slash ||
        snprintf(path, sizeof(path), "%.*s/job", (int)(slash - mp), mp) >= (int)sizeof(path))
        return 1;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    n = fd >= 0 ? read(fd, job, sizeof(job) - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (n <= 0)
        return 1;
    job[n] = '\0';
    if (agent_job_running(job, a) || !st->s)
        return 1;
    doc = store_job_get(st->s, job, &err);
    if (!doc)
        return err.code != TY_ENOTFOUND; /* gone: reap; Redis away: keep */
    {
        const char *status = json_string_value(json_object_get(doc, "TrainingJobStatus"));
        keep = !status || strcmp(status, "InProgress") == 0 || strcmp(status, "Stopping") == 0;
    }
    json_decref(doc);
    return keep;
}

/* Every AGENT_LEFTOVER_S (the first a second after start): removes what dead agents left on
   the engine, and the volumes of jobs that ended without removing theirs. Its own thread, so
   that an engine slow to list its containers never holds up a claim. */
static void *agent_sweep_thread(void *arg)
{
    struct sweep_state st = {.a = arg};
    struct agent *a = st.a;
    struct ty_err err;
    int n, wait_ms = 1000;

    while (!agent__sleep(a, wait_ms)) {
        wait_ms = AGENT_LEFTOVER_S * 1000;
        if (!st.s && !(st.s = store_open(a->cfg.redis_url, &err)))
            continue; /* the volumes wait too: whether a job still runs is the store's word */
        if (a->volumes && (n = volume_reap(a->cfg.staging_dir, claim_volume_keep, &st)) > 0)
            ty_log(TY_LOG_INFO, "agent.volume.reaped", "volumes=%d", n);
        if (!st.d)
            st.d = docker_open(a->cfg.docker_host, &err);
        if (st.d &&
            leftover_sweep(st.s, st.d, a->deployment, a->id, 3 * a->cfg.heartbeat_ttl_s) < 0) {
            docker_close(st.d); /* the engine or Redis did not answer: fresh ones next time */
            st.d = NULL;
            store_close(st.s);
            st.s = NULL;
        }
    }
    store_close(st.s);
    docker_close(st.d);
    return NULL;
}

/* The next of this agent's own pending entries (CLAIM_OWN, CLAIM_RESCAN). */
static enum claim_found claim_own(struct agent *a, struct claim_state *st, struct ty_err *err)
{
    struct queue_item item;
    int rc;

    memset(&item, 0, sizeof(item));
    rc = queue_own_pending(st->s, a->id, st->own_after, &item, err);
    if (rc < 0)
        return CLAIM_FAILED;
    if (rc == 0) { /* the walk is over */
        st->phase = CLAIM_QUEUE;
        st->next_own = ty_mono_s() + AGENT_OWN_RESCAN_S;
        return CLAIM_NONE;
    }
    snprintf(st->own_after, sizeof(st->own_after), "%s", item.entry_id);
    if (st->phase == CLAIM_RESCAN && agent_job_running(item.job, a))
        return CLAIM_TOOK; /* its runner is at work */
    ty_log(TY_LOG_INFO, "agent.claim.own_pending", "agent=%s job=%s entry=%s", a->id, item.job,
           item.entry_id);
    claim_spawn(a, &item, 1, NULL, NULL);
    return CLAIM_TOOK;
}

/* Reads the live agents' total capacity again when it is older than AGENT_TOTAL_S (a failed
   read keeps the last one: the order is then by slightly old shares). */
static void claim_total(struct claim_state *st)
{
    struct ty_err err;
    json_t *agents;

    if (st->total_at > 0 && ty_mono_s() - st->total_at < AGENT_TOTAL_S)
        return;
    if (!(agents = queue_agents(st->s, &err)))
        return;
    queue_capacity_total(agents, &st->total);
    json_decref(agents);
    st->total_at = ty_mono_s();
}

/*
 * While a job waits for room: a new entry wakes the loop at once (XREAD BLOCK, in steps of
 * AGENT_ENDED_POLL_MS), and so does one of this agent's runners ending (what it frees is what the
 * waiting job may need) within a step, instead of after AGENT_RECHECK_MS. 1 (a new entry), 0, or a
 * negative error.
 */
static int claim_wait_room(struct agent *a, struct claim_state *st, const char *last,
                           unsigned long ended, struct ty_err *err)
{
    for (int t = 0; t < AGENT_RECHECK_MS; t += AGENT_ENDED_POLL_MS) {
        int rc;
        if (atomic_load(&a->runs_ended) != ended || atomic_load(&a->stopping))
            return 0;
        if ((rc = queue_wait_new(st->s, last, AGENT_ENDED_POLL_MS, err)) != 0)
            return rc;
    }
    return 0;
}

/*
 * The first waiting entry in fair-share order (queue_waiting: the principal holding the least
 * dominant share first, then the oldest) that this agent has room for (agent__admit), taken;
 * entries it has no room for stay for another agent or a later look (a smaller job behind a
 * large one may start first: no resource sits idle while a job that fits it waits). Nothing
 * taken: waits up to AGENT_CLAIM_BLOCK_MS for a new entry, or AGENT_RECHECK_MS when a job waits
 * for room.
 */
static enum claim_found claim_pick(struct agent *a, struct claim_state *st, struct ty_err *err)
{
    struct queue_item w[AGENT_PICK_WINDOW];
    char last[64];
    size_t n = 0;
    json_t *agents = NULL;
    int waits = 0, rc;

    unsigned long ended = atomic_load(&a->runs_ended); /* before the look: no end is missed */

    claim_total(st);
    if (queue_waiting(st->s, AGENT_PICK_WINDOW, &st->total, w, &n, last, sizeof(last), err) < 0)
        return CLAIM_FAILED;
    for (size_t i = 0; i < n; i++) {
        struct ledger_res charge;
        char fail[sizeof(((struct agent_run *)0)->fail)];
        int cpu_only;
        rc = agent__admit(a, st->s, &w[i], &agents, &charge, &cpu_only, fail, sizeof(fail), err);
        if (rc == 1)
            rc =
                queue_take(st->s, a->id, &w[i],
                           &(struct queue_res){charge.gpus, charge.cpus, charge.memory_bytes}, err);
        else if (rc == 0)
            waits = 1;
        if (rc < 0) {
            json_decref(agents);
            return CLAIM_FAILED;
        }
        if (rc == 0)
            continue; /* it waits, or another agent took it first */
        json_decref(agents);
        ty_log(TY_LOG_INFO, "agent.claim.took",
               "agent=%s job=%s entry=%s gpus=%d cpus=%d "
               "memory_bytes=%lld fail=%d",
               a->id, w[i].job, w[i].entry_id, charge.gpus, charge.cpus,
               (long long)charge.memory_bytes, fail[0] != '\0');
        if (!fail[0])
            agent__admit_taken(st->s, w[i].job, cpu_only);
        claim_spawn(a, &w[i], 0, &charge, fail[0] ? fail : NULL);
        return CLAIM_TOOK;
    }
    json_decref(agents);
    rc = waits ? claim_wait_room(a, st, last, ended, err)
               : queue_wait_new(st->s, last, AGENT_CLAIM_BLOCK_MS, err);
    return rc < 0 ? CLAIM_FAILED : rc == 1 ? CLAIM_TOOK : CLAIM_IDLE;
}

/* A dead agent's entry, else a waiting one (CLAIM_QUEUE; claim_pick). */
static enum claim_found claim_queue(struct agent *a, struct claim_state *st, struct ty_err *err)
{
    long min_idle_ms = (long)a->cfg.heartbeat_ttl_s * 3 * 1000;
    struct queue_item item;
    int rc;

    memset(&item, 0, sizeof(item));
    rc = queue_reclaim(st->s, a->id, min_idle_ms, &item, err);
    if (rc == 1 && agent_job_running(item.job, a)) {
        /* ours again (the server's janitor took it while Redis had lost our heartbeat):
           its runner here goes on and acknowledges it; no second run */
        ty_log(TY_LOG_INFO, "agent.claim.already_running", "agent=%s job=%s entry=%s", a->id,
               item.job, item.entry_id);
        return CLAIM_TOOK;
    }
    if (rc == 1) {
        ty_log(TY_LOG_INFO, "agent.claim.reclaimed", "agent=%s job=%s entry=%s", a->id, item.job,
               item.entry_id);
        claim_spawn(a, &item, 1, NULL, NULL);
        return CLAIM_TOOK;
    }
    return rc == 0 ? claim_pick(a, st, err) : CLAIM_FAILED;
}

static void *agent_claim_thread(void *arg)
{
    struct agent *a = arg;
    struct claim_state st = {.phase = CLAIM_OWN,
                             .a = a,
                             .backoff_ms = 500,
                             .next_own = ty_mono_s() + AGENT_OWN_RESCAN_S};
    struct ty_err err;

    while (!atomic_load(&a->stopping)) {
        enum claim_found found = CLAIM_NONE;
        unsigned long ended;
        int busy;

        pthread_mutex_lock(&a->mu);
        agent_reap_locked(a);
        busy = a->busy;
        ended = atomic_load(&a->runs_ended);
        pthread_mutex_unlock(&a->mu);
        if (busy >= a->cfg.slots) {
            agent__sleep_end(a, 250, ended); /* a slot frees when a runner ends */
            continue;
        }
        if (!st.s && !(st.s = store_open(a->cfg.redis_url, &err))) {
            ty_log(TY_LOG_WARN, "agent.claim.store", "agent=%s error='%s'", a->id, err.msg);
            claim_backoff(a, &st);
            continue;
        }
        if (st.phase == CLAIM_QUEUE && ty_mono_s() >= st.next_own) {
            st.phase = CLAIM_RESCAN;
            st.own_after[0] = '\0';
        }
        if (st.phase != CLAIM_QUEUE && !st.own_after[0] &&
            outbox_replay_all(st.s, a->cfg.data_dir, agent_job_running, a) > 0 &&
            store_ping(st.s, &err) != 0) {
            /* Redis away again: the leftovers wait for the next pass */
            store_close(st.s);
            st.s = NULL;
            agent__sleep(a, st.backoff_ms);
            continue;
        }
        if (st.phase != CLAIM_QUEUE)
            found = claim_own(a, &st, &err);
        if (found == CLAIM_NONE)
            found = claim_queue(a, &st, &err);
        if (found != CLAIM_FAILED) {
            st.backoff_ms = 500;
            continue;
        }
        ty_log(TY_LOG_WARN, "agent.claim.failed", "agent=%s error='%s'", a->id, err.msg);
        store_close(st.s);
        st.s = NULL;
        claim_backoff(a, &st);
    }
    store_close(st.s);
    return NULL;
}

/* ---- lifecycle ---- */

/* 1 when a CDI spec under /etc/cdi or /var/run/cdi names kind nvidia.com/gpu. */
static int agent_cdi_has_nvidia(void)
{
    static const char *const dirs[] = {"/etc/cdi", "/var/run/cdi"};
    int found = 0;

    for (size_t i = 0; i < 2 && !found; i++) {
        DIR *d = opendir(dirs[i]);
        struct dirent *de;
        while (d && !found && (de = readdir(d)) != NULL) {
            char path[PATH_MAX], buf[4096];
            size_t n;
            FILE *f;
            if (de->d_name[0] == '.' ||
                snprintf(path, sizeof(path), "%s/%s", dirs[i], de->d_name) >= (int)sizeof(path) ||
                !(f = fopen(path, "re")))
                continue;
            n = fread(buf, 1, sizeof(buf) - 1, f);
            buf[n] = '\0';
            fclose(f);
            found = strstr(buf, "nvidia.com/gpu") != NULL;
        }
        if (d)
            closedir(d);
    }
    return found;
}

/* GPUs found in /dev that Podman has no CDI spec for cannot be attached: said at start, and
   the ledger counts none (a GPU job then runs on the CPU, its log says so) instead of
   pretending. Declared GPUs (--gpus) are the admin's word. */
static void agent_gpus_check(struct agent *a)
{
    if (a->host_gpus == 0 || a->cfg.gpus != 0 || a->engine_docker)
        return;
    if (agent_cdi_has_nvidia()) {
        ty_log(TY_LOG_INFO, "agent.gpus", "gpus=%d attach=cdi", a->host_gpus);
        return;
    }
    ty_log(TY_LOG_WARN, "agent.gpus",
           "gpus=%d attach=none reason='no CDI spec in /etc/cdi or /var/run/cdi names "
           "nvidia.com/gpu (nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml), and Podman "
           "attaches GPUs only through CDI' note='the ledger counts no GPU'",
           a->host_gpus);
    a->host_gpus = 0;
    a->cap.gpus = 0;
}

/* Whether jobs get volumes (agent_config.job_volumes), said once at start. 0, or -1 with err
   when "loop" was asked and this host cannot, or the mode is unknown. */
static int agent_volumes_init(struct agent *a, struct ty_err *err)
{
    const char *mode = a->cfg.job_volumes;
    char why[180];

    if (strcmp(mode, "none") == 0) {
        a->volumes = 0;
        snprintf(a->volumes_off, sizeof(a->volumes_off), "--job-volumes none");
    } else if (strcmp(mode, "loop") == 0 || strcmp(mode, "auto") == 0) {
        a->volumes = volume_supported(why, sizeof(why));
        if (!a->volumes && mode[0] == 'l')
            return ty_err_set(err, TY_EINVAL, "job-volumes",
                              "--job-volumes loop: this host cannot make job volumes: %s", why);
        if (!a->volumes)
            snprintf(a->volumes_off, sizeof(a->volumes_off), "%s", why);
    } else {
        return ty_err_set(err, TY_EINVAL, "job-volumes",
                          "--job-volumes is auto, loop or none, not '%.40s'", mode);
    }
    if (a->volumes)
        ty_log(TY_LOG_INFO, "agent.volumes", "mode=loop");
    else
        ty_log(TY_LOG_WARN, "agent.volumes",
               "mode=none reason='%s' note='VolumeSizeInGB is not enforced: /opt/ml is a folder "
               "of the host disk, and each job log says so'",
               a->volumes_off);
    return 0;
}

static const char *agent_own(struct agent *a, int slot, const char *s)
{
    if (!s)
        return NULL;
    a->owned[slot] = strdup(s);
    return a->owned[slot];
}

static void agent_free(struct agent *a)
{
    if (!a)
        return;
    warmpool_stop(a->wp);
    spare_stop(a->spare);
    gpumetrics_close(a->gpu);
    slurmx_stop(a->sx);
    for (size_t i = 0; i < sizeof(a->owned) / sizeof(a->owned[0]); i++)
        free(a->owned[i]);
    pthread_mutex_destroy(&a->mu);
    pthread_cond_destroy(&a->cv);
    free(a);
}

/* Removes the runtime image's earlier builds ("<image>-r<other fingerprint>" tags), which the
   public name no longer points to. Best effort: one a container still uses stays. */
static void agent_runtime_image_prune(struct agent *a, struct docker *d, const char *fp_tag)
{
    char prefix[300];
    struct ty_err err;
    json_t *list = docker_image_list(d, &err), *img, *tags, *t;
    size_t i, j, pl;

    snprintf(prefix, sizeof(prefix), "%s-r", a->cfg.runtime_image);
    pl = strlen(prefix);
    json_array_foreach(list, i, img)
    {
        tags = json_object_get(img, "RepoTags");
        json_array_foreach(tags, j, t)
        {
            const char *tag = json_string_value(t), *bare = tag;
            if (!tag)
                continue;
            if (strncmp(bare, "docker.io/", 10) == 0)
                bare += 10;
            else if (strncmp(bare, "localhost/", 10) == 0)
                bare += 10;
            if (strncmp(bare, prefix, pl) != 0 || strcmp(bare, fp_tag) == 0)
                continue;
            if (docker_image_remove(d, tag, &err) == 0)
                ty_log(TY_LOG_INFO, "agent.runtime_image.pruned", "tag=%s", tag);
            else
                ty_log(TY_LOG_DEBUG, "agent.runtime_image.prune_skipped", "tag=%s error='%s'", tag,
                       err.msg);
        }
    }
    json_decref(list);
}

/*
 * The seccomp profile of the job's containers (seccomp.h): on Podman, its default profile with
 * new user namespaces refused, written to <data_dir>/seccomp-no-userns.json and named by path
 * in each container's SecurityOpt; on Docker, the engine's default, which already refuses them
 * to a process without CAP_SYS_ADMIN. A Podman without its default profile on this host leaves
 * the engine's default in force and says so, with the kernel's user.max_user_namespaces.
 * Returns 0, or a negative code (the profile exists and cannot be read or written).
 */
static int agent_seccomp(struct agent *a, struct docker *d, struct ty_err *err)
{
    char dir[PATH_MAX], path[PATH_MAX + 32];
    int podman = docker_is_podman(d, err), rc;
    long max_ns = -1;
    FILE *f;

    a->seccomp_path[0] = '\0';
    if (podman < 0)
        return podman;
    a->engine_docker = !podman;
    if (!podman) {
        ty_log(TY_LOG_INFO, "agent.sandbox.seccomp",
               "engine=docker profile=default (no namespace without CAP_SYS_ADMIN)");
        return 0;
    }
    if (!realpath(a->cfg.data_dir, dir))
        return ty_err_set(err, TY_EIO, NULL, "cannot resolve data dir '%s': %s", a->cfg.data_dir,
                          strerror(errno));
    snprintf(path, sizeof(path), "%s/seccomp-no-userns.json", dir);
    rc = seccomp_write_profile(SECCOMP_PODMAN_DEFAULT, path, err);
    if (rc == 0) {
        snprintf(a->seccomp_path, sizeof(a->seccomp_path), "%s", path);
        ty_log(TY_LOG_INFO, "agent.sandbox.seccomp",
               "engine=podman profile='%s' base='%s' user_namespaces=refused", path,
               SECCOMP_PODMAN_DEFAULT);
        return 0;
    }
    if (rc != -TY_ENOTFOUND)
        return rc;
    ty_err_clear(err);
    if ((f = fopen("/proc/sys/user/max_user_namespaces", "re")) != NULL) {
        if (fscanf(f, "%ld", &max_ns) != 1)
            max_ns = -1;
        fclose(f);
    }
    ty_log(max_ns == 0 ? TY_LOG_INFO : TY_LOG_WARN, "agent.sandbox.seccomp",
           "engine=podman profile=default base='%s' missing user.max_user_namespaces=%ld: %s",
           SECCOMP_PODMAN_DEFAULT, max_ns,
           max_ns == 0 ? "no user namespace can be made"
                       : "a job can make a user namespace and hold capabilities inside it "
                         "(install containers-common's seccomp.json, or set "
                         "user.max_user_namespaces=0)");
    return 0;
}

/*
 * Imports the runtime image from its tarball when the engine lacks it or holds an older
 * build: each import is also tagged "<image>-r<fingerprint of the tarball>", so a rebuilt
 * tarball (new size or mtime) is imported again under the same public name.
 */
static int agent_runtime_image(struct agent *a, struct docker *d, struct ty_err *err)
{
    static const char *const changes[] = {
        "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "WORKDIR /", NULL};
    char fp_tag[512];
    struct stat st;
    int ex, rc;

    if (!a->cfg.runtime_image || !a->cfg.runtime_image[0])
        return 0;
    if (!a->cfg.runtime_tar || !a->cfg.runtime_tar[0] || stat(a->cfg.runtime_tar, &st) != 0) {
        ex = docker_image_exists(d, a->cfg.runtime_image, err);
        if (ex < 0)
            return ex;
        if (ex == 0)
            ty_log(TY_LOG_WARN, "agent.runtime_image.missing", "image=%s tar='%s'",
                   a->cfg.runtime_image, a->cfg.runtime_tar ? a->cfg.runtime_tar : "");
        return 0;
    }
    snprintf(fp_tag, sizeof(fp_tag), "%s-r%llx%llx", a->cfg.runtime_image,
             (unsigned long long)st.st_size,
             (unsigned long long)st.st_mtim.tv_sec * 1000000000ull +
                 (unsigned long long)st.st_mtim.tv_nsec);
    ex = docker_image_exists(d, fp_tag, err);
    if (ex < 0)
        return ex;
    if (ex == 1) {
        /* this build's import exists: the public name points at it, even if another build
           (another tarball on the same engine) moved the name since */
        if (docker_image_tag(d, fp_tag, a->cfg.runtime_image, err) != 0) {
            ty_log(TY_LOG_WARN, "agent.runtime_image.retag_failed", "image=%s error='%s'",
                   a->cfg.runtime_image, err->msg);
            ty_err_clear(err);
        }
        return 0;
    }
    ty_log(TY_LOG_INFO, "agent.runtime_image.import", "image=%s tar='%s'", a->cfg.runtime_image,
           a->cfg.runtime_tar);
    rc = docker_image_import(d, a->cfg.runtime_tar, fp_tag, changes, err);
    if (rc == 0)
        rc = docker_image_tag(d, fp_tag, a->cfg.runtime_image, err);
    if (rc == 0)
        agent_runtime_image_prune(a, d, fp_tag);
    return rc;
}

/* a->cfg: a copy of cfg whose strings a owns, its id (cfg's, or "<host>-<pid>-<n>"), and the
   defaults (S3 and staging folders, runtime image, region, slots, grace, heartbeat TTL).
   0 or error (-TY_EINVAL for a missing or too long setting, -TY_ENOMEM). */
static int agent_config_own(struct agent *a, const struct agent_config *cfg, struct ty_err *err)
{
    static atomic_int seq;
    char host[64], path[4096];

    a->cfg = *cfg;
    if (!cfg->redis_url || !cfg->docker_host || !cfg->data_dir) {
        ty_err_set(err, TY_EINVAL, NULL, "agent needs a redis url, a docker host and a data dir");
        return -1;
    }
    if (cfg->id && cfg->id[0]) {
        if (strlen(cfg->id) >= sizeof(a->id)) {
            ty_err_set(err, TY_EINVAL, "id", "agent id '%s' is too long", cfg->id);
            return -1;
        }
        snprintf(a->id, sizeof(a->id), "%s", cfg->id);
    } else {
        if (gethostname(host, sizeof(host)) != 0)
            snprintf(host, sizeof(host), "agent");
        host[sizeof(host) - 1] = '\0';
        snprintf(a->id, sizeof(a->id), "%s-%ld-%d", host, (long)getpid(),
                 atomic_fetch_add(&seq, 1));
    }
    a->cfg.id = a->id;
    a->cfg.redis_url = agent_own(a, 0, cfg->redis_url);
    a->cfg.docker_host = agent_own(a, 1, cfg->docker_host);
    a->cfg.data_dir = agent_own(a, 2, cfg->data_dir);
    if (cfg->s3_dir) {
        a->cfg.s3_dir = agent_own(a, 3, cfg->s3_dir);
    } else {
        snprintf(path, sizeof(path), "%s/s3", cfg->data_dir);
        a->cfg.s3_dir = agent_own(a, 3, path);
    }
    a->cfg.runtime_tar = agent_own(a, 4, cfg->runtime_tar);
    a->cfg.runtime_image =
        agent_own(a, 5, cfg->runtime_image ? cfg->runtime_image : "trainyard/runtime:" TY_VERSION);
    a->cfg.endpoint_url = agent_own(a, 6, cfg->endpoint_url);
    a->cfg.relay_proxy =
        agent_own(a, 14, cfg->relay_proxy && cfg->relay_proxy[0] ? cfg->relay_proxy : NULL);
    a->cfg.region = agent_own(a, 7, cfg->region ? cfg->region : "us-east-1");
    a->cfg.job_volumes = agent_own(a, 9, cfg->job_volumes ? cfg->job_volumes : "auto");
    a->cfg.gpu_devices = agent_own(a, 15, cfg->gpu_devices);
    if (cfg->staging_dir && cfg->staging_dir[0]) {
        a->cfg.staging_dir = agent_own(a, 8, cfg->staging_dir);
    } else {
        stage_default_root(path, sizeof(path));
        a->cfg.staging_dir = agent_own(a, 8, path);
    }
    if (cfg->s3_remote) {
        struct s3c *probe;
        a->s3_remote.endpoint = agent_own(a, 10, cfg->s3_remote->endpoint);
        a->s3_remote.access_key = agent_own(a, 11, cfg->s3_remote->access_key);
        a->s3_remote.secret_key = agent_own(a, 12, cfg->s3_remote->secret_key);
        a->s3_remote.region = agent_own(a, 13, cfg->s3_remote->region);
        a->cfg.s3_remote = &a->s3_remote;
        if (!(probe = s3c_new(&a->s3_remote, err))) /* the form is checked now, not per job */
            return -1;
        s3c_free(probe);
    }
    if (!a->cfg.redis_url || !a->cfg.docker_host || !a->cfg.data_dir || !a->cfg.s3_dir ||
        !a->cfg.runtime_image || !a->cfg.region) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return -1;
    }
    if (a->cfg.slots <= 0)
        a->cfg.slots = 1;
    if (a->cfg.stop_grace_s <= 0)
        a->cfg.stop_grace_s = AGENT_DEFAULT_GRACE;
    if (a->cfg.heartbeat_ttl_s <= 0)
        a->cfg.heartbeat_ttl_s = AGENT_DEFAULT_TTL_S;
    return 0;
}

/* The Slurm executor's start (a->sx running): the deployment's id, the first heartbeat, the
   heartbeat and claim threads. No engine, volumes, spare sandbox or leftover sweep here: the
   launchers on the nodes own those. 0 or -1 with err. */
static int agent_slurm_start(struct agent *a, struct store *s, struct ty_err *err)
{
    json_t *cap;
    int rc;

    if (store_deployment_id(s, a->deployment, sizeof(a->deployment), err) != 0)
        return -1;
    cap = agent_capacity(a);
    if (cap)
        json_object_set_new(cap, "executor", json_string("slurm"));
    rc = cap ? queue_heartbeat(s, a->id, cap, a->cfg.heartbeat_ttl_s, err) : -1;
    json_decref(cap);
    if (rc != 0)
        return -1;
    if (pthread_create(&a->hb_thr, NULL, agent_heartbeat_thread, a) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the heartbeat thread");
    a->hb_started = 1;
    if (pthread_create(&a->claim_thr, NULL, agent_claim_thread, a) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the claim thread");
    a->claim_started = 1;
    ty_log(TY_LOG_INFO, "agent.started",
           "agent=%s executor=slurm slots=%d stop_grace_s=%d data_dir='%s' runtime_image=%s", a->id,
           a->cfg.slots, a->cfg.stop_grace_s, a->cfg.data_dir, a->cfg.runtime_image);
    return 0;
}

struct agent *agent_start(const struct agent_config *cfg, struct ty_err *err)
{
    struct agent *a = calloc(1, sizeof(*a));
    struct store *s = NULL;
    struct docker *d = NULL;
    char path[4096];
    json_t *cap = NULL;
    int rc;

    if (!a) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->cv, NULL);
    atomic_init(&a->stopping, 0);
    if (agent_config_own(a, cfg, err) != 0)
        goto fail;
    agent_probe_host(a);
    if (a->host_gpus > 0 && !(a->gpu = gpumetrics_open(NULL)))
        ty_log(TY_LOG_INFO, "agent.nvml.absent",
               "gpus=%d note='libnvidia-ml.so.1 not loaded: no GPU instance metrics'",
               a->host_gpus);

    snprintf(path, sizeof(path), "%s/jobs", a->cfg.data_dir);
    if (mkdir(a->cfg.data_dir, 0755) != 0 && errno != EEXIST) {
        ty_err_set(err, TY_EIO, NULL, "cannot create data dir '%s': %s", a->cfg.data_dir,
                   strerror(errno));
        goto fail;
    }
    if (mkdir(path, 0755) != 0 && errno != EEXIST) {
        ty_err_set(err, TY_EIO, NULL, "cannot create '%s': %s", path, strerror(errno));
        goto fail;
    }

    if (!a->cfg.staging_dir || stage_root_init(a->cfg.staging_dir, err) != 0 ||
        stage_key_load(a->cfg.data_dir, a->stage_key, err) != 0)
        goto fail;
    if (!cfg->slurm && agent_volumes_init(a, err) != 0)
        goto fail;

    if (!(s = store_open(a->cfg.redis_url, err)))
        goto fail;
    if (store_ping(s, err) != 0 || queue_init(s, err) != 0)
        goto fail;
    if (cfg->slurm) { /* the nodes' engines are the launchers' business: none here */
        if (!(a->sx = slurmx_start(cfg->slurm, err)))
            goto fail;
        a->cfg.slurm = slurmx_cfg(a->sx);
        if (agent_slurm_start(a, s, err) != 0)
            goto fail;
        store_close(s);
        return a;
    }
    if (!(d = docker_open(a->cfg.docker_host, err)))
        goto fail;
    if ((rc = docker_ping(d, err)) != 0)
        goto fail;
    if ((rc = agent_seccomp(a, d, err)) != 0) {
        char why[sizeof(err->msg)];
        snprintf(why, sizeof(why), "%s", err->msg);
        ty_err_set(err, err->code ? err->code : TY_EENGINE, NULL,
                   "cannot prepare the containers' seccomp profile: %s", why);
        goto fail;
    }
    agent_gpus_check(a);
    if ((rc = agent_runtime_image(a, d, err)) != 0) {
        ty_err_set(err, err->code ? err->code : TY_EENGINE, NULL,
                   "cannot import runtime image '%s' from '%s': %s", a->cfg.runtime_image,
                   a->cfg.runtime_tar, err->msg[0] ? err->msg : "error");
        goto fail;
    }
    if (store_deployment_id(s, a->deployment, sizeof(a->deployment), err) != 0)
        goto fail;
    /* Alive before the first claim, so that nobody reclaims what we are about to take. */
    cap = agent_capacity(a);
    if (!cap || queue_heartbeat(s, a->id, cap, a->cfg.heartbeat_ttl_s, err) != 0)
        goto fail;
    json_decref(cap);
    cap = NULL;
    docker_close(d);
    d = NULL;
    store_close(s);
    s = NULL;

    if (!(a->wp = warmpool_start(a->cfg.redis_url, a->cfg.docker_host, a->cfg.slots, err)))
        goto fail;
    if (a->cfg.runtime_image && a->cfg.runtime_image[0]) {
        struct spare_config sc = {.docker_host = a->cfg.docker_host,
                                  .image = a->cfg.runtime_image,
                                  .seccomp = a->seccomp_path,
                                  .deployment = a->deployment,
                                  .agent = a->id};
        if (!(a->spare = spare_start(&sc, err)))
            goto fail;
    }
    if (pthread_create(&a->hb_thr, NULL, agent_heartbeat_thread, a) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the heartbeat thread");
        goto fail;
    }
    a->hb_started = 1;
    if (pthread_create(&a->claim_thr, NULL, agent_claim_thread, a) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the claim thread");
        goto fail;
    }
    a->claim_started = 1;
    if (pthread_create(&a->sweep_thr, NULL, agent_sweep_thread, a) != 0) {
        ty_err_set(err, TY_EINTERNAL, NULL, "cannot start the leftover sweep's thread");
        goto fail;
    }
    a->sweep_started = 1;
    ty_log(TY_LOG_INFO, "agent.started",
           "agent=%s slots=%d stop_grace_s=%d cpus=%d memory_bytes=%lld gpus=%d ledger_cpus=%d "
           "ledger_memory_bytes=%lld ledger_gpus=%d overcommit=%g data_dir='%s' "
           "staging_dir='%s' s3_dir='%s' runtime_image=%s",
           a->id, a->cfg.slots, a->cfg.stop_grace_s, a->host_cpus, (long long)a->host_memory,
           a->host_gpus, a->cap.cpus, (long long)a->cap.memory_bytes, a->cap.gpus,
           a->cfg.overcommit > 0 ? a->cfg.overcommit : 1.0, a->cfg.data_dir, a->cfg.staging_dir,
           a->cfg.s3_dir, a->cfg.runtime_image);
    return a;

fail:
    json_decref(cap);
    docker_close(d);
    store_close(s);
    if (a->hb_started || a->claim_started || a->sweep_started) {
        agent_stop(a);
        return NULL;
    }
    agent_free(a);
    return NULL;
}

void agent_stop(struct agent *a)
{
    if (!a)
        return;
    pthread_mutex_lock(&a->mu);
    atomic_store(&a->stopping, 1);
    pthread_cond_broadcast(&a->cv);
    pthread_mutex_unlock(&a->mu);
    if (a->claim_started)
        pthread_join(a->claim_thr, NULL);
    if (a->hb_started)
        pthread_join(a->hb_thr, NULL);
    if (a->sweep_started)
        pthread_join(a->sweep_thr, NULL);
    pthread_mutex_lock(&a->mu);
    while (a->runs) {
        struct agent_run *r = a->runs;
        a->runs = r->next;
        pthread_mutex_unlock(&a->mu);
        pthread_join(r->thr, NULL);
        free(r);
        pthread_mutex_lock(&a->mu);
    }
    pthread_mutex_unlock(&a->mu);
    warmpool_stop(a->wp); /* the retained instances end with the agent (Terminated) */
    a->wp = NULL;
    spare_stop(a->spare);
    a->spare = NULL;
    ty_log(TY_LOG_INFO, "agent.stopped", "agent=%s", a->id);
    agent_free(a);
}

json_t *agent_status(struct agent *a)
{
    json_t *jobs, *out;
    int busy;

    if (!a)
        return NULL;
    jobs = json_array();
    if (!jobs)
        return NULL;
    pthread_mutex_lock(&a->mu);
    for (struct agent_run *r = a->runs; r; r = r->next) {
        if (!r->done)
            json_array_append_new(jobs, json_string(r->item.job));
    }
    busy = a->busy;
    pthread_mutex_unlock(&a->mu);
    out = json_pack("{s:s, s:s, s:i, s:i, s:o, s:i, s:I, s:i}", "id", a->id, "state",
                    atomic_load(&a->stopping) ? "stopping" : "running", "slots", a->cfg.slots,
                    "busy", busy, "jobs", jobs, "cpus", a->host_cpus, "memory_bytes",
                    (json_int_t)a->host_memory, "gpus", a->host_gpus);
    if (out)
        agent_use_json(a, out);
    return out;
}
