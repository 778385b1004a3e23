/*
 * launchwire.h - what a per-node launcher and its executor say to each other (docs/slurm.md,
 * "The launchers' reports"): a launcher runs one host of a training job on a node the
 * executor does not reach (a Slurm node), and reports to the executor over HTTP; the executor
 * stays the only writer of the job's state.
 *
 *   POST /launch/v1/report   Authorization: Bearer <the attempt's launch token>
 *     body: a report (launchwire_report_json), answer 200: launchwire_answer_json
 *
 * A report carries the host's phase, the container's new log lines and, at the end, its exit
 * and failure file (and, from algo-1, the model's upload). Reports are numbered per host
 * (seq 1, 2, ...): a launcher sends report seq again until an answer acknowledges it, and the
 * executor applies each seq once. A report without lines is a heartbeat. The answer tells the
 * launcher to stop its container (StopTrainingJob, MaxRuntimeInSeconds), with the grace.
 *
 * Owns: the wire's encoding, decoding and limits. Pure: no socket, no clock; thread-safe.
 */
#ifndef TY_LAUNCH_LAUNCHWIRE_H
#define TY_LAUNCH_LAUNCHWIRE_H

#include "ty_err.h"

#include <jansson.h>
#include <stddef.h>

#define LAUNCHWIRE_PATH_REPORT "/launch/v1/report"
#define LAUNCHWIRE_TOKEN_HEX   64                /* a launch token: 32 random bytes in hex */
#define LAUNCHWIRE_MAX_HOSTS   256               /* hosts (nodes) of one job */
#define LAUNCHWIRE_MAX_LINES   1000              /* log lines in one report */
#define LAUNCHWIRE_MAX_LINE    (256 * 1024)      /* bytes of one line (CloudWatch's event) */
#define LAUNCHWIRE_MAX_BODY    (4 * 1024 * 1024) /* bytes of one report */
#define LAUNCHWIRE_FAILURE_MAX 1024              /* bytes of the failure file kept */

enum launchwire_phase {
    LAUNCHWIRE_STAGING, /* the host's /opt/ml is being staged, no container yet */
    LAUNCHWIRE_RUNNING, /* the training container started (started is its time) */
    LAUNCHWIRE_ENDED,   /* the container ended (exit_code, exit_signal, failure) */
};

/* One report of one host. */
struct launchwire_report {
    char job[64];  /* TrainingJobName */
    int attempt;   /* the executor's attempt it belongs to (1, 2, ...) */
    int host;      /* 0-based: algo-<host + 1> */
    char node[64]; /* the node's name (SLURMD_NODENAME) */
    long long seq; /* 1, 2, ... per host */
    enum launchwire_phase phase;
    double started; /* epoch seconds the container started, 0 before */
    json_t *lines;  /* borrowed from doc (or the caller's when encoding), may be NULL: the
                       container's new lines, in order, [[epoch_ms, "text", is_stderr], ...] */
    /* LAUNCHWIRE_ENDED only: */
    int exit_code;                        /* the container's exit status */
    int exit_signal;                      /* the signal that ended it, 0 when it exited */
    int stopped;                          /* the launcher stopped it (an answer's stop) */
    char failure[LAUNCHWIRE_FAILURE_MAX]; /* /opt/ml/output/failure, "" when none */
    char model_error[512];                /* algo-1: a FailureReason when the model's upload
                                             failed, "" when it was uploaded or not asked */
    char error[LAUNCHWIRE_FAILURE_MAX];   /* the launcher's own FailureReason when the container
                                             never ran or could not be followed (staging, the
                                             engine), "" when none; started may then be 0 */
    json_t *doc;                          /* owned by a decoded report: free with
                                             launchwire_report_free; NULL when encoding */
};

/* The executor's answer. */
struct launchwire_answer {
    long long ack; /* the highest seq of this host the executor applied */
    int stop;      /* 1: stop the container now (SIGTERM, grace, SIGKILL) */
    int grace_s;   /* the stop's grace */
    int upload;    /* with stop: 1 to upload the model after it (StopTrainingJob does), 0 not */
};

/* new: the report's JSON body (r->doc unused). NULL when out of memory. */
json_t *launchwire_report_json(const struct launchwire_report *r);

/*
 * Decodes a report body (n bytes). OUT: r (on success its doc is owned: launchwire_report_free;
 * on failure nothing is). 0, or
 * -TY_EINVAL with err->msg saying what is wrong (a missing or malformed member, a host, seq or
 * line over the limits). Lines are kept in the order sent; their times may go back (stdout and
 * stderr interleave): the executor keeps a stream's times from going back.
 */
int launchwire_report_parse(const char *body, size_t n, struct launchwire_report *r,
                            struct ty_err *err);
void launchwire_report_free(struct launchwire_report *r);

/* new: the answer's JSON body. NULL when out of memory. */
json_t *launchwire_answer_json(const struct launchwire_answer *a);

/* Decodes an answer body. 0, or -TY_EINVAL with err. */
int launchwire_answer_parse(const char *body, size_t n, struct launchwire_answer *a,
                            struct ty_err *err);

/* 1 when s is a launch token's form (LAUNCHWIRE_TOKEN_HEX lower-case hex digits). */
int launchwire_token_ok(const char *s);

#endif
