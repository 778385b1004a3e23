/*
 * launchsrv.h - the executor's end of the launchers' wire (launchwire.h): an HTTP listener that
 * takes each node's reports, checks the attempt's launch token, applies each report once (in
 * order per job, through the executor's callback), remembers when each host was last heard
 * from, and answers with the executor's stop.
 *
 *   POST /launch/v1/report  a report; 200 with an answer, 400 a body that is not a report, 401
 *                           no or an unknown token, 403 a report of another job or attempt
 *                           than its token's, 410 the attempt has ended (the launcher stops
 *                           its container and uploads nothing), 503 the executor cannot apply
 *                           it now (the launcher sends it again)
 *   GET  /launch/v1/job     the attempt's assignment (the executor's callback), 200 or 401/410
 *
 * Owns: the listener (ty_http), the table of live attempts (token, job, attempt, hosts, each
 * host's last applied seq and last contact, the stop) and of ended ones for an hour.
 * Thread-safe: requests are served on the listener's threads; the executor's calls take the
 * table's lock. Reports of one job are applied one at a time, in the order they come.
 */
#ifndef TY_LAUNCH_LAUNCHSRV_H
#define TY_LAUNCH_LAUNCHSRV_H

#include "launchwire.h"
#include "ty_err.h"

#include <jansson.h>

#define LAUNCHSRV_PATH_JOB "/launch/v1/job"

struct launchsrv;

/*
 * Applies report r of a live attempt (seq above the host's last applied one; lines, phase,
 * exit), on a listener thread. 0 when applied, or -1 when it cannot be now (the launcher is
 * answered 503 and sends it again). ud is launchsrv_start's.
 */
typedef int (*launchsrv_report_fn)(void *ud, const struct launchwire_report *r);

/* new: the assignment of host (0-based) of job's attempt, the body of GET /launch/v1/job; NULL
   when there is none now (answered 503). */
typedef json_t *(*launchsrv_assign_fn)(void *ud, const char *job, int attempt, int host);

/*
 * Listens on listen ("HOST:PORT"; port 0 picks one) and serves the wire. new: launchsrv_stop.
 * NULL with err (the address in use).
 */
struct launchsrv *launchsrv_start(const char *listen, launchsrv_report_fn report,
                                  launchsrv_assign_fn assign, void *ud, struct ty_err *err);
/* Stops listening (in-flight requests end first) and frees everything. NULL is a no-op. */
void launchsrv_stop(struct launchsrv *s);
/* The port bound. */
int launchsrv_port(const struct launchsrv *s);

/*
 * Accepts the launchers of job's attempt, of hosts hosts, holding token (launchwire_token_ok).
 * acked: each host's last applied seq (hosts of them; NULL: none yet), for an executor that
 * restarted. Replaces what job had. 0, or -TY_EINVAL (a bad token or count), -TY_ENOMEM.
 */
int launchsrv_add(struct launchsrv *s, const char *token, const char *job, int attempt, int hosts,
                  const long long *acked);
/* The attempt of job has ended: its launchers are answered 410 for an hour. */
void launchsrv_end(struct launchsrv *s, const char *job);
/* Tells job's launchers, in every answer from now on, to stop their containers with grace_s,
   and whether to upload the model after. */
void launchsrv_set_stop(struct launchsrv *s, const char *job, int grace_s, int upload);
/*
 * When host (0-based) of job was last heard from (any report, even one resent), in epoch
 * seconds, and its last applied seq. OUT: *seq (may be NULL). 0 when never, -1 when job is not
 * live.
 */
double launchsrv_last_seen(struct launchsrv *s, const char *job, int host, long long *seq);

#endif
