/*
 * ty_mem.c - malloc's arena cap and periodic trim for the daemons (ty_mem.h).
 *
 * Only glibc is tuned (mallopt, malloc_trim); elsewhere the calls do nothing. ty_mem_sigwait is
 * meant for main's thread, which otherwise sits idle in sigwait while the workers run.
 */
#include "ty_mem.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <time.h>

#ifdef __GLIBC__
#include <malloc.h>
#endif

int ty_mem_init(int max_arenas)
{
#ifdef __GLIBC__
    const char *env = getenv("MALLOC_ARENA_MAX");
    if (env && *env) {
        long v = strtol(env, NULL, 10);
        return v > 0 && v <= INT_MAX ? (int)v : 0;
    }
    if (max_arenas > 0 && mallopt(M_ARENA_MAX, max_arenas) == 1)
        return max_arenas;
#else
    (void)max_arenas;
#endif
    return 0;
}

int ty_mem_trim(void)
{
#ifdef __GLIBC__
    return malloc_trim(0) ? 1 : 0;
#else
    return 0;
#endif
}

int ty_mem_sigwait(const sigset_t *set)
{
    for (;;) {
        struct timespec ts = {TY_MEM_TRIM_S, 0};
        int sig = sigtimedwait(set, NULL, &ts);
        if (sig > 0)
            return sig;
        if (errno == EAGAIN)
            ty_mem_trim();
    }
}
