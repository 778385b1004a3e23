/* pool.c - libtyc's CPU thread pool: a fixed set of worker threads owned by one session, the
 * caller as thread 0, and per-thread plus shared scratch memory reserved before a step runs.
 *
 * Owns: the worker threads and the scratch buffers. Does not own: the kernels it runs.
 * A job is `ntasks` independent tasks handed out through an atomic counter; tyc__pool_run()
 * returns when every task has finished. Kernels partition work so that no two tasks write the
 * same output and every output is computed by one task in a fixed order: results do not depend
 * on which thread runs a task or on the thread count. Workers spin briefly for the next job, then
 * sleep on a condition variable (the machine may be shared). A pool is used by one thread at a
 * time (its session's). The pool a kernel should use is bound per calling thread
 * (tyc__pool_bind) so the kernel entry points keep their signatures; unbound, kernels run serially.
 */
#include "tyc_int.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define POOL_MAX_THREADS 256
/* pause loops (about 40 us) a worker spins for the next job before it sleeps, and the caller
 * for the last tasks before it yields: on a loaded shared machine 20000 (about 0.4 ms) took
 * the core from this session's other thread and other processes (gpt-tiny at 2 threads, load
 * 12: 26-38 ms a step with 20000, 13-32 ms with 2000) */
#define POOL_SPIN 2000

struct tyc__pool {
    int n; /* threads including the caller */
    pthread_t *th;
    int started;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    atomic_int sleepers;
    atomic_int stop;
    /* the current job: ticket = gen << 48 | ntasks << 24 | next task; a worker claims a task by
     * a CAS that keeps gen and ntasks, so it can never claim a task of a job already finished */
    _Atomic uint64_t ticket;
    atomic_int done; /* tasks of the current job finished */
    void (*fn)(void *ctx, int task, int tid);
    void *ctx;
    /* scratch */
    float *shared, *local;
    size_t shared_n, local_n;
};

#define T_GEN(t)  ((t) >> 48)
#define T_NT(t)   (((t) >> 24) & 0xffffffu)
#define T_NEXT(t) ((t)&0xffffffu)
#define T_MAXN    0xffffffu

struct worker_arg {
    struct tyc__pool *p;
    int tid;
};

static _Thread_local const struct tyc__cpu_ctx *pool_bound;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

int tyc__pool_default_threads(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0 && CPU_COUNT(&set) < n)
        n = CPU_COUNT(&set);
    if (n < 1)
        n = 1;
    return n > POOL_MAX_THREADS ? POOL_MAX_THREADS : (int)n;
}

/* Claims and runs tasks of the job the ticket names; returns when none is left. */
static void drain(struct tyc__pool *p, int tid)
{
    uint64_t t = atomic_load(&p->ticket);
    while (T_NEXT(t) < T_NT(t)) {
        if (!atomic_compare_exchange_weak(&p->ticket, &t, t + 1))
            continue;
        p->fn(p->ctx, (int)T_NEXT(t), tid);
        atomic_fetch_add(&p->done, 1);
        t = atomic_load(&p->ticket);
    }
}

static void *worker(void *arg)
{
    struct worker_arg *wa = arg;
    struct tyc__pool *p = wa->p;
    int tid = wa->tid;
    uint64_t seen = 0;
    tyc__free(wa);
    for (;;) {
        int spin;
        uint64_t t = atomic_load(&p->ticket);
        for (spin = 0; T_GEN(t) == seen && spin < POOL_SPIN; spin++) {
            cpu_relax();
            t = atomic_load(&p->ticket);
        }
        if (T_GEN(t) == seen) {
            pthread_mutex_lock(&p->mu);
            atomic_fetch_add(&p->sleepers, 1);
            while (T_GEN(atomic_load(&p->ticket)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->wake, &p->mu);
            atomic_fetch_sub(&p->sleepers, 1);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop))
            return NULL;
        seen = T_GEN(atomic_load(&p->ticket));
        drain(p, tid);
    }
}

struct tyc__pool *tyc__pool_new(int threads)
{
    struct tyc__pool *p;
    int i;
    if (threads <= 0)
        threads = tyc__pool_default_threads();
    if (threads > POOL_MAX_THREADS)
        threads = POOL_MAX_THREADS;
    p = tyc__calloc(1, sizeof(*p));
    if (!p)
        return NULL;
    p->n = threads;
    atomic_init(&p->ticket, 0);
    atomic_init(&p->done, 0);
    atomic_init(&p->sleepers, 0);
    atomic_init(&p->stop, 0);
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        tyc__free(p);
        return NULL;
    }
    pthread_cond_init(&p->wake, NULL);
    if (threads > 1) {
        p->th = tyc__calloc((size_t)threads, sizeof(pthread_t));
        if (!p->th)
            goto fail;
        for (i = 1; i < threads; i++) {
            struct worker_arg *wa = tyc__malloc(sizeof(*wa));
            if (!wa)
                goto fail;
            wa->p = p;
            wa->tid = i;
            if (pthread_create(&p->th[i], NULL, worker, wa) != 0) {
                tyc__free(wa);
                goto fail;
            }
            p->started++;
        }
    }
    return p;
fail:
    /* run with the threads that did start */
    tyc__log(1, "event=tyc.pool.short threads=%d started=%d", threads, p->started + 1);
    if (!p->th) {
        p->n = 1;
        return p;
    }
    p->n = p->started + 1;
    return p;
}

void tyc__pool_free(struct tyc__pool *p)
{
    int i;
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (i = 1; i <= p->started; i++)
        pthread_join(p->th[i], NULL);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    tyc__free(p->th);
    tyc__free(p->shared);
    tyc__free(p->local);
    tyc__free(p);
}

int tyc__pool_threads(const struct tyc__pool *p)
{
    return p ? p->n : 1;
}

int tyc__pool_reserve(struct tyc__pool *p, size_t shared, size_t per_thread)
{
    if (shared > p->shared_n) {
        float *s = tyc__realloc(p->shared, shared * sizeof(float));
        if (!s)
            return -TYC_ENOMEM;
        p->shared = s;
        p->shared_n = shared;
    }
    if (per_thread > p->local_n) {
        float *l = tyc__realloc(p->local, per_thread * (size_t)p->n * sizeof(float));
        if (!l)
            return -TYC_ENOMEM;
        p->local = l;
        p->local_n = per_thread;
    }
    return 0;
}

size_t tyc__pool_bytes(const struct tyc__pool *p)
{
    return p ? (p->shared_n + p->local_n * (size_t)p->n) * sizeof(float) : 0;
}

void tyc__pool_ctx(struct tyc__pool *p, struct tyc__cpu_ctx *c)
{
    memset(c, 0, sizeof(*c));
    c->pool = p;
    c->threads = p->n;
    c->shared = p->shared;
    c->local = p->local;
    c->local_n = p->local_n;
}

void tyc__pool_run(struct tyc__pool *p, int ntasks, void (*fn)(void *ctx, int task, int tid),
                   void *ctx)
{
    uint64_t t;
    int spin;
    if (ntasks <= 0)
        return;
    if (!p || p->n == 1 || ntasks == 1 || (unsigned)ntasks > T_MAXN) {
        for (spin = 0; spin < ntasks; spin++)
            fn(ctx, spin, 0);
        return;
    }
    /* the previous job is finished: no worker reads fn/ctx until the new ticket is out */
    p->fn = fn;
    p->ctx = ctx;
    atomic_store(&p->done, 0);
    t = atomic_load(&p->ticket);
    atomic_store(&p->ticket, ((T_GEN(t) + 1) & 0xffffu) << 48 | (uint64_t)ntasks << 24);
    if (atomic_load(&p->sleepers) > 0) {
        pthread_mutex_lock(&p->mu);
        pthread_cond_broadcast(&p->wake);
        pthread_mutex_unlock(&p->mu);
    }
    drain(p, 0);
    /* wait only for tasks other threads claimed */
    for (spin = 0; atomic_load(&p->done) < ntasks; spin++) {
        if (spin < POOL_SPIN)
            cpu_relax();
        else
            sched_yield();
    }
}

void tyc__pool_bind(const struct tyc__cpu_ctx *c)
{
    pool_bound = c;
}

const struct tyc__cpu_ctx *tyc__pool_bound(void)
{
    return pool_bound;
}
