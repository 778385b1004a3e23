/*
 * worker.c - the per-thread context of an HTTP worker (worker.h).
 *
 * Invariant: w->os is NULL whenever w->store is (the handle lives on the connection).
 */
#include "worker.h"

#include "objstore.h"
#include "store.h"

#include <pthread.h>
#include <stdlib.h>

static pthread_key_t worker_key;
static pthread_once_t worker_once = PTHREAD_ONCE_INIT;

static void worker_close(struct worker *w)
{
    objstore_close(w->os);
    w->os = NULL;
    store_close(w->store);
    w->store = NULL;
}

static void worker_free(void *p)
{
    struct worker *w = p;
    if (!w)
        return;
    for (int i = 0; i < w->nhooks; i++)
        w->hooks[i]();
    auth_cache_cleanup(&w->cache);
    store_jobmemo_cleanup(&w->jobmemo);
    worker_close(w);
    free(w);
}

static void worker_key_init(void)
{
    pthread_key_create(&worker_key, worker_free);
}

struct worker *worker_self(void)
{
    struct worker *w;

    pthread_once(&worker_once, worker_key_init);
    w = pthread_getspecific(worker_key);
    if (w)
        return w;
    w = calloc(1, sizeof(*w));
    if (w && pthread_setspecific(worker_key, w) != 0) {
        free(w);
        w = NULL;
    }
    return w;
}

struct store *worker_store(struct worker *w, const char *url, struct ty_err *err)
{
    if (!w) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (!w->store)
        w->store = store_open(url, err);
    return w->store;
}

struct objstore *worker_objstore(struct worker *w, const char *url, const char *s3_dir,
                                 struct ty_err *err)
{
    if (!worker_store(w, url, err))
        return NULL;
    if (!w->os)
        w->os = objstore_open(s3_dir ? s3_dir : "s3", w->store, err);
    return w->os;
}

void worker_failed(struct worker *w, int code)
{
    if (w && (code == TY_EREDIS || code == -TY_EREDIS))
        worker_close(w);
}

void worker_at_exit(struct worker *w, void (*fn)(void))
{
    if (!w)
        return;
    for (int i = 0; i < w->nhooks; i++)
        if (w->hooks[i] == fn)
            return;
    if (w->nhooks < WORKER_MAX_HOOKS)
        w->hooks[w->nhooks++] = fn;
}
