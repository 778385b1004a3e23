/*
 * ty_time.c - deadlines for timed waits, the monotonic and the wall clock (ty_time.h).
 *
 * Invariant: the result's tv_nsec is always in 0..999999999, whatever ms is.
 */
#include "ty_time.h"

void ty_deadline_ms(struct timespec *ts, long ms)
{
    clock_gettime(CLOCK_REALTIME, ts);
    if (ms < 0)
        ms = 0;
    ts->tv_sec += (time_t)(ms / 1000);
    ts->tv_nsec += (ms % 1000) * 1000000L;
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

double ty_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

long long ty_mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long ty_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double ty_wall_s(void)
{
    return (double)ty_wall_ms() / 1000.0;
}
