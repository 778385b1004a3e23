/*
 * ty_mem.h - the C library allocator's settings for trainyard's long-running daemons
 * (trainyard-server, trainyard-agent): a cap on malloc's arenas and a periodic trim.
 *
 * Why: glibc's malloc gives each thread that allocates its own arena (up to 8 per CPU) and keeps
 * the memory freed in it. In the 10-minute soak (bench/soak.sh) the server's live heap stayed
 * under 2 MB mean, 3.8 MB peak (heaptrack), while its RSS grew 17 -> 28 MB: freed chunks held
 * in 11 arenas, one per HTTP worker and helper thread (malloc_info: 7.5 MB taken from the
 * kernel, 4.7 MB of it free). Capping the arenas lets every thread reuse the same freed chunks;
 * trimming hands whole free pages back to the kernel. With both, the same soak ends at 20 MB,
 * flat after its warm-up (bench/README.md has the figures).
 *
 * Owns: nothing. Off glibc every function is a no-op (ty_mem_sigwait still waits).
 */
#ifndef TY_CORE_TY_MEM_H
#define TY_CORE_TY_MEM_H

#include <signal.h>

/* Default cap on malloc's arenas (MALLOC_ARENA_MAX in the environment overrides it). */
#define TY_MEM_ARENAS 2
/* Seconds between two trims of ty_mem_sigwait. */
#define TY_MEM_TRIM_S 60

/*
 * Caps malloc's arenas at max_arenas unless MALLOC_ARENA_MAX is set (glibc then applies that
 * one itself). Call from main before any thread starts. Returns the cap in force (0 = glibc's
 * default: 8 per CPU).
 */
int ty_mem_init(int max_arenas);

/*
 * Hands the free pages of every arena back to the kernel (glibc's malloc_trim(0)); returns 1
 * when some memory was released, else 0. Thread-safe; takes each arena's lock in turn.
 */
int ty_mem_trim(void);

/*
 * As sigwait(2) on set (its signals blocked in every thread), calling ty_mem_trim every
 * TY_MEM_TRIM_S seconds while none arrives. Returns the signal taken.
 */
int ty_mem_sigwait(const sigset_t *set);

#endif
