/*
 * ty_time.h - deadlines for timed waits (the absolute CLOCK_REALTIME time that
 * pthread_cond_timedwait measures against, some milliseconds from now), the monotonic clock
 * that intervals and back-offs are measured on, and the wall clock that timestamps (AWS's
 * epoch seconds, log events, expiries) are read from, in whole milliseconds everywhere.
 *
 * Owns: nothing beyond the call. Thread-safe (no shared state).
 */
#ifndef TY_CP_CORE_TY_TIME_H
#define TY_CP_CORE_TY_TIME_H

#include <time.h>

/* OUT: ts = now (CLOCK_REALTIME) + ms (ms >= 0), tv_nsec normalised to 0..999999999. */
void ty_deadline_ms(struct timespec *ts, long ms);

/* CLOCK_MONOTONIC in seconds (fractional) and in whole milliseconds. */
double ty_mono_s(void);
long long ty_mono_ms(void);

/* The wall clock (CLOCK_REALTIME): milliseconds since the epoch, and the same instant in
   seconds (a whole number of milliseconds, as AWS's timestamps carry). */
long long ty_wall_ms(void);
double ty_wall_s(void);

#endif
