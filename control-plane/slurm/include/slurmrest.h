/*
 * slurmrest.h - a client of Slurm's REST API (slurmrestd, OpenAPI plugin v0.0.38 of Slurm 22.05)
 * for the Slurm executor: ping, nodes, partitions, submit, one job, the jobs changed since a
 * time, cancel with a signal.
 *
 * Owns: one keep-alive HTTP connection (libcurl; or one per request: one_shot) and the JWT it
 * sends: minted from the cluster's
 * HS256 key (the file slurmctld's AuthAltParameters=jwt_key names), renewed at half its life, or
 * read again from a token file at each renewal. The answers' quirks, measured on 22.05.8
 * (docs/slurm.md), are handled here: a job unknown to slurmctld (purged, or never) answers HTTP
 * 500 with error 2017, made -TY_ENOTFOUND; GET /jobs with update_time answers 304 when nothing
 * changed; submit errors come as error_code, job errors as error_number.
 * Thread-safety: one struct slurmrest per thread.
 */
#ifndef TY_SLURM_SLURMREST_H
#define TY_SLURM_SLURMREST_H

#include "ty_err.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct slurmrest;

struct slurmrest_config {
    const char *url;          /* required: "http://host:port" of slurmrestd */
    const char *api;          /* the OpenAPI plugin, NULL = "v0.0.38" */
    const char *user;         /* X-SLURM-USER-NAME: whom jobs run as, NULL = "root" */
    const char *jwt_key_path; /* the cluster's JWT key: tokens are minted from it, or */
    const char *token_path;   /* a file holding a token (read again at each renewal) */
    int token_life_s;         /* a minted token's life, 0 = 600 s */
    int one_shot;             /* 1: a connection per request, closed after it (slurmrestd
                                 serves a few connections at a time: a client that asks now
                                 and then must not hold one); 0: keep-alive */
};

/* Opens a client (nothing is sent yet). new: slurmrest_close. NULL with err (TY_EINVAL: a
   missing url, no key nor token, an unreadable key file). */
struct slurmrest *slurmrest_open(const struct slurmrest_config *cfg, struct ty_err *err);
void slurmrest_close(struct slurmrest *s);

/* GET /ping: 0, or a negative code: TY_EDENIED when slurmrestd answers 401, TY_EENGINE for
   anything else, with the URL in the message (a token slurmctld refuses answers as slurmctld
   being down does: the message says both). */
int slurmrest_ping(struct slurmrest *s, struct ty_err *err);

/* GET /nodes, GET /partitions: the answer's "nodes" / "partitions" array. new: json_decref.
   NULL with err. */
json_t *slurmrest_nodes(struct slurmrest *s, struct ty_err *err);
json_t *slurmrest_partitions(struct slurmrest *s, struct ty_err *err);

/* One batch job to submit. Strings borrowed; NULL = not sent. */
struct slurmrest_submit {
    const char *name;
    const char *script;    /* required: "#!/bin/sh\n..." */
    const char *partition; /* NULL = the cluster's default */
    const char *comment;
    const char *cwd;         /* required: current_working_directory on the nodes */
    const char *stdout_path; /* "%j" is the job id */
    const char *gres;        /* per node, "gpu:2" */
    int nodes;               /* exactly this many nodes (sent as an integer: the spec's [min,max]
                                array runs on one node) */
    int tasks_per_node;      /* 0 = not sent */
    int exclusive;           /* the nodes are the job's alone */
    int time_limit_min;      /* 0 = the partition's */
    json_t *environment;     /* borrowed object of strings, NULL = {"PATH": "/usr/bin:/bin"} */
};

/* Slurm's error numbers a submission can meet (slurm_errno.h). */
#define SLURMREST_EBAD_PARTITION 2000 /* no such partition */
#define SLURMREST_ENODE_CONFIG   2014 /* no node of the partition has what one node asks */
#define SLURMREST_EPARTITION_NOW 2015 /* more nodes than the partition has: accepted, pending */
#define SLURMREST_EJOB_ID        2017 /* no such job (never, or purged) */

/*
 * POST /job/submit. OUT: *job_id; *warn, Slurm's error number when it accepted the job with one
 * (SLURMREST_EPARTITION_NOW: it will wait for ever), else 0. 0, or -TY_EINVAL when Slurm
 * refused the job (err->msg: Slurm's words and number, err->field "slurm:<number>"), or
 * another negative code.
 */
int slurmrest_submit_job(struct slurmrest *s, const struct slurmrest_submit *sub, long *job_id,
                         int *warn, struct ty_err *err);

/* A job as GET /job/{id} shows it (the fields the executor reads). */
struct slurmrest_job {
    long id;
    char name[128];
    char comment[512];
    char state[32];        /* job_state: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED,
                              NODE_FAIL, TIMEOUT, ... */
    char reason[64];       /* state_reason: Resources, Priority, PartitionNodeLimit, ... */
    char description[256]; /* state_description */
    char nodes[256];       /* "n[1-2]", "" while pending */
    char batch_host[128];
    int node_count;
    int restart_cnt; /* > 0: Slurm requeued it */
    int exit_code;   /* the batch script's: its exit status, or 128 + the signal */
    int exit_signal; /* the signal that ended it, 0 when it exited */
    int64_t submit_time, start_time, end_time; /* epoch seconds, 0 when not yet */
};

/* Decodes GET /job's answer for one job (borrowed). 0, or -TY_EENGINE when j is not a job. */
int slurmrest_job_parse(json_t *j, struct slurmrest_job *out, struct ty_err *err);

/* GET /job/{id}. 0, -TY_ENOTFOUND when slurmctld does not know it (never, or purged after
   MinJobAge), or another negative code. */
int slurmrest_job(struct slurmrest *s, long id, struct slurmrest_job *out, struct ty_err *err);

/*
 * GET /jobs?update_time=*since. OUT: *jobs, the "jobs" array (new), or NULL when nothing
 * changed since *since (HTTP 304); after a 200, *since is this host's clock a second before the
 * request (the answer has no time of its own: a slurmctld clock behind ours may hide a change
 * for that long, so a follower still reads its jobs one by one now and then). 0 or a negative
 * code.
 */
int slurmrest_jobs_since(struct slurmrest *s, int64_t *since, json_t **jobs, struct ty_err *err);

/* DELETE /job/{id}, with signal ("USR1": to the batch script and every step, nothing killed)
   or NULL (Slurm's full cancel: SIGCONT, SIGTERM, SIGKILL after KillWait). A job already ended
   is not an error. 0 or a negative code. */
int slurmrest_cancel(struct slurmrest *s, long id, const char *signal, struct ty_err *err);

#define SLURMREST_NODE_MAX 64 /* a node name's room, with its NUL */

/*
 * Expands a Slurm host list ("n[1-3,7],gpu[01-02],login": one bracket per name, ranges keep the
 * low bound's zero padding) into names, in Slurm's order (that of SLURM_NODEID). Returns the
 * count (0 for "" or NULL), or -1 for a malformed list, a name over SLURMREST_NODE_MAX - 1, or
 * more than max names.
 */
int slurmrest_hostlist(const char *list, char (*names)[SLURMREST_NODE_MAX], int max);

#endif
