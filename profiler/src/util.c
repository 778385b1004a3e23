/*
 * util.c - allocator hook, logger, clock and small file-system helpers of libtyprof.
 *
 * Owns: the process-wide allocator table and log sink. Invariant: the allocator is replaced
 * only before the recorder starts (typrof_set_allocators refuses afterwards).
 */
#include "typrof_int.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static struct typrof_allocators g_alloc = {malloc, calloc, realloc, free};
static typrof_log_fn g_log_fn;
static void *g_log_ud;
int typrof__log_level = TYPROF_LOG_WARN;
int typrof__started_once; /* set by runtime.c */

void *typrof__malloc(size_t n)
{
    return g_alloc.malloc_fn(n ? n : 1);
}

void *typrof__calloc(size_t n, size_t sz)
{
    return g_alloc.calloc_fn(n ? n : 1, sz ? sz : 1);
}

void *typrof__realloc(void *p, size_t n)
{
    return g_alloc.realloc_fn(p, n ? n : 1);
}

void typrof__free(void *p)
{
    if (p)
        g_alloc.free_fn(p);
}

char *typrof__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = typrof__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

TY_EXPORT int typrof_set_allocators(const struct typrof_allocators *a)
{
    if (typrof__started_once)
        return -TYPROF_ESTATE;
    if (!a || !a->malloc_fn || !a->calloc_fn || !a->realloc_fn || !a->free_fn)
        return -TYPROF_EINVAL;
    g_alloc = *a;
    return 0;
}

static int level_from_env(void)
{
    const char *e = getenv("TYPROF_LOG");
    if (!e)
        return TYPROF_LOG_WARN;
    if (!strcmp(e, "error"))
        return TYPROF_LOG_ERROR;
    if (!strcmp(e, "info"))
        return TYPROF_LOG_INFO;
    if (!strcmp(e, "debug"))
        return TYPROF_LOG_DEBUG;
    return TYPROF_LOG_WARN;
}

TY_EXPORT void typrof_set_log(typrof_log_fn fn, void *userdata, int max_level)
{
    g_log_fn = fn;
    g_log_ud = userdata;
    typrof__log_level = fn ? max_level : level_from_env();
}

void typrof__log_init(void)
{
    if (!g_log_fn)
        typrof__log_level = level_from_env();
}

void typrof__logf(int level, const char *event, const char *fmt, ...)
{
    static const char *names[] = {"error", "warn", "info", "debug"};
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    if (g_log_fn) {
        g_log_fn(level, event, msg, g_log_ud);
        return;
    }
    if (level < 0 || level > TYPROF_LOG_DEBUG)
        level = TYPROF_LOG_DEBUG;
    fprintf(stderr, "typrof: level=%s event=%s %s\n", names[level], event, msg);
}

uint64_t typrof__realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int typrof__mkdirs(const char *dir)
{
    char buf[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(buf))
        return -TYPROF_EINVAL;
    memcpy(buf, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (buf[i] != '/' && buf[i] != '\0')
            continue;
        char c = buf[i];
        buf[i] = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return -TYPROF_EIO;
        buf[i] = c;
    }
    return 0;
}

const char *typrof__node_id(void)
{
    const char *e = getenv("TYPROF_NODE_ID");
    if (e && *e)
        return e;
    e = getenv("SM_CURRENT_HOST");
    if (e && *e)
        return e;
    return "algo-1";
}

void typrof__hour_dir(int64_t t, char out[11])
{
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    unsigned y = (unsigned)(tm.tm_year + 1900) % 10000u, mo = (unsigned)(tm.tm_mon + 1) % 100u;
    unsigned d = (unsigned)tm.tm_mday % 100u, h = (unsigned)tm.tm_hour % 100u;
    char buf[32];
    snprintf(buf, sizeof(buf), "%04u%02u%02u%02u", y, mo, d, h);
    memcpy(out, buf, 10);
    out[10] = '\0';
}

#define TID_MAP_MAX 4096
static struct {
    uint32_t from, to;
} g_tids[TID_MAP_MAX];
static unsigned g_ntids;
static pthread_mutex_t g_tid_lock = PTHREAD_MUTEX_INITIALIZER;

void typrof__tid_register(uint32_t cupti_id, uint32_t os_tid)
{
    pthread_mutex_lock(&g_tid_lock);
    unsigned i;
    for (i = 0; i < g_ntids; i++)
        if (g_tids[i].from == cupti_id)
            break;
    if (i < TID_MAP_MAX) {
        g_tids[i].from = cupti_id;
        g_tids[i].to = os_tid;
        if (i == g_ntids)
            g_ntids++;
    }
    pthread_mutex_unlock(&g_tid_lock);
}

uint32_t typrof__tid_lookup(uint32_t id)
{
    uint32_t r = id;
    pthread_mutex_lock(&g_tid_lock);
    for (unsigned i = 0; i < g_ntids; i++)
        if (g_tids[i].from == id) {
            r = g_tids[i].to;
            break;
        }
    pthread_mutex_unlock(&g_tid_lock);
    return r;
}
