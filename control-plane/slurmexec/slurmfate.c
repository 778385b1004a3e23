/*
 * slurmfate.c - what a Slurm job's state means for its training job (slurmfate.h): waiting,
 * running, ended as the launchers report, or failed, and the words a user reads for each.
 * Owns nothing between calls; pure.
 */
#include "slurmfate.h"

#include <stdio.h>
#include <string.h>

#define SLURMFATE_MAX_NODES 128 /* the nodes of one job this looks through */

/* Pending reasons with which a job never starts: Slurm keeps it pending for ever. */
static const struct {
    const char *reason, *why;
} slurmfate_never[] = {
    {"PartitionNodeLimit", "the job asks more nodes than the partition has or lets one job use"},
    {"PartitionTimeLimit", "the job's time limit is over the partition's MaxTime"},
    {"BadConstraints", "no node of the partition has what one instance asks"},
    {"PartitionConfig", "the partition's settings refuse the job"},
    {"InvalidAccount", "the job's account is not valid"},
    {"InvalidQOS", "the job's QOS is not valid"},
    {"AccountNotAllowed", "the partition does not allow the job's account"},
    {"QOSNotAllowed", "the partition does not allow the job's QOS"},
    {"DependencyNeverSatisfied", "a dependency can never be satisfied"},
};

/* States in which the job holds its nodes: the launchers run (or are being started, or end). */
static const char *const slurmfate_running[] = {
    "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "RESIZING", "SIGNALING", "STAGE_OUT",
};

static int slurmfate_in(const char *s, const char *const *set, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, set[i]) == 0)
            return 1;
    return 0;
}

static void slurmfate_set(struct slurmfate *out, enum slurmfate_kind kind, int cancel)
{
    out->kind = kind;
    out->cancel = cancel;
    out->msg[0] = '\0';
}

/* "node n2 (algo-2)", "a node of n[1-2]" or "a node" into buf. */
static const char *slurmfate_node_words(const struct slurmrest_job *j,
                                        const struct slurmfate_ctx *c, char *buf, size_t n)
{
    if (c->lost_node && c->lost_node[0] && c->lost_host >= 0)
        snprintf(buf, n, "node %s (algo-%d)", c->lost_node, c->lost_host + 1);
    else if (c->lost_node && c->lost_node[0])
        snprintf(buf, n, "node %s", c->lost_node);
    else if (j && j->nodes[0])
        snprintf(buf, n, "a node of %s", j->nodes);
    else
        snprintf(buf, n, "a node");
    return buf;
}

/* Pending: wait with Slurm's reason in words, or fail when it can never start. */
static void slurmfate_pending(const struct slurmrest_job *j, const struct slurmfate_ctx *c,
                              struct slurmfate *out)
{
    const char *r = j->reason, *part = c->partition ? c->partition : "(default)";
    size_t m = sizeof(out->msg);

    for (size_t i = 0; i < sizeof(slurmfate_never) / sizeof(slurmfate_never[0]); i++) {
        if (strcmp(r, slurmfate_never[i].reason) != 0)
            continue;
        slurmfate_set(out, SLURMFATE_FAIL, 1);
        snprintf(out->msg, m,
                 "ClientError: Slurm cannot place %d x %s in partition '%s': %s (%s). Slurm job "
                 "%ld was cancelled",
                 c->hosts, c->instance_type, part, slurmfate_never[i].why, r, c->slurm_id);
        return;
    }
    slurmfate_set(out, SLURMFATE_WAIT, 0);
    if (strcmp(r, "Resources") == 0)
        snprintf(out->msg, m,
                 "Waiting for %d free node%s of partition '%s' for %s (Slurm job %ld: "
                 "Resources)",
                 c->hosts, c->hosts == 1 ? "" : "s", part, c->instance_type, c->slurm_id);
    else if (strcmp(r, "Priority") == 0)
        snprintf(out->msg, m,
                 "Waiting behind jobs of higher priority in partition '%s' (Slurm job %ld: "
                 "Priority)",
                 part, c->slurm_id);
    else if (!r[0] || strcmp(r, "None") == 0)
        snprintf(out->msg, m, "Submitted to Slurm as job %ld, in partition '%s'", c->slurm_id,
                 part);
    else if (strncmp(r, "JobHeld", 7) == 0)
        snprintf(out->msg, m, "Held in Slurm (job %ld: %s); it starts once released", c->slurm_id,
                 r);
    else if (j->description[0])
        snprintf(out->msg, m, "Waiting in Slurm, partition '%s' (job %ld: %s, %s)", part,
                 c->slurm_id, r, j->description);
    else
        snprintf(out->msg, m, "Waiting in Slurm, partition '%s' (job %ld: %s)", part, c->slurm_id,
                 r);
}

/* Ended in Slurm: the launchers' reports decide, or Slurm's end is the failure. */
static void slurmfate_ended(const struct slurmrest_job *j, const struct slurmfate_ctx *c,
                            struct slurmfate *out)
{
    const char *s = j->state;
    size_t m = sizeof(out->msg);
    char node[320];

    if (c->launchers_done || (c->stop_sent && strcmp(s, "NODE_FAIL") != 0)) {
        slurmfate_set(out, SLURMFATE_REPORTS, 0);
        return;
    }
    slurmfate_set(out, SLURMFATE_FAIL, 0);
    if (strcmp(s, "NODE_FAIL") == 0)
        snprintf(out->msg, m,
                 "InternalServerError: Slurm %s failed (job %ld: NODE_FAIL); the training script "
                 "is not run again",
                 slurmfate_node_words(j, c, node, sizeof(node)), c->slurm_id);
    else if (strcmp(s, "CANCELLED") == 0)
        snprintf(out->msg, m,
                 "InternalServerError: Slurm job %ld was cancelled outside trainyard (scancel or "
                 "an administrator); the training script is not run again",
                 c->slurm_id);
    else if (strcmp(s, "TIMEOUT") == 0)
        snprintf(out->msg, m,
                 "InternalServerError: Slurm ended job %ld at its time limit before trainyard's "
                 "MaxRuntimeInSeconds stopped it",
                 c->slurm_id);
    else if (strcmp(s, "PREEMPTED") == 0)
        snprintf(out->msg, m,
                 "InternalServerError: Slurm preempted job %ld; the training script is not run "
                 "again",
                 c->slurm_id);
    else if (strcmp(s, "BOOT_FAIL") == 0)
        snprintf(out->msg, m, "InternalServerError: Slurm could not boot the nodes of job %ld (%s)",
                 c->slurm_id, j->nodes[0] ? j->nodes : "none");
    else if (j->exit_signal)
        snprintf(out->msg, m,
                 "InternalServerError: Slurm job %ld ended %s (signal %d, %s) before its "
                 "launchers reported their end",
                 c->slurm_id, s, j->exit_signal, j->reason[0] ? j->reason : "no reason");
    else
        snprintf(out->msg, m,
                 "InternalServerError: Slurm job %ld ended %s (exit status %d, %s) before its "
                 "launchers reported their end",
                 c->slurm_id, s, j->exit_code, j->reason[0] ? j->reason : "no reason");
}

void slurmfate_decide(const struct slurmrest_job *j, const struct slurmfate_ctx *c,
                      struct slurmfate *out)
{
    size_t m = sizeof(out->msg);
    char node[320];
    int running;

    if (!j) { /* purged (MinJobAge) or cancelled before it was ever seen */
        if (c->launchers_done || c->stop_sent) {
            slurmfate_set(out, SLURMFATE_REPORTS, 0);
            return;
        }
        slurmfate_set(out, SLURMFATE_FAIL, 0);
        snprintf(out->msg, m,
                 "InternalServerError: Slurm no longer knows job %ld, and its launchers did not "
                 "report their end",
                 c->slurm_id);
        return;
    }
    running = slurmfate_in(j->state, slurmfate_running,
                           sizeof(slurmfate_running) / sizeof(slurmfate_running[0]));
    if (j->restart_cnt > 0 || strncmp(j->state, "REQUEUE", 7) == 0 ||
        (strcmp(j->state, "PENDING") == 0 && c->seen_running)) {
        slurmfate_set(out, SLURMFATE_FAIL, 1);
        snprintf(out->msg, m,
                 "InternalServerError: Slurm requeued job %ld (%s, %s) after %s failed; trainyard "
                 "cancelled it: the training script is not run again",
                 c->slurm_id, j->state, j->reason[0] ? j->reason : "no reason",
                 slurmfate_node_words(j, c, node, sizeof(node)));
        return;
    }
    if (strcmp(j->state, "PENDING") == 0) {
        slurmfate_pending(j, c, out);
        return;
    }
    if (running && c->lost_node && c->lost_node[0] && !c->launchers_done) {
        slurmfate_set(out, SLURMFATE_FAIL, 1);
        snprintf(out->msg, m,
                 "InternalServerError: Slurm %s failed (job %ld); trainyard cancelled the job: the "
                 "training script is not run again",
                 slurmfate_node_words(j, c, node, sizeof(node)), c->slurm_id);
        return;
    }
    if (running) {
        slurmfate_set(out, SLURMFATE_RUN, 0);
        if (strcmp(j->state, "SUSPENDED") == 0)
            snprintf(out->msg, m, "Suspended by Slurm (job %ld)", c->slurm_id);
        return;
    }
    slurmfate_ended(j, c, out);
}

int slurmfate_lost_node(const struct slurmrest_job *j, json_t *nodes, char *node, size_t n,
                        int *host)
{
    char names[SLURMFATE_MAX_NODES][SLURMREST_NODE_MAX];
    int k = slurmrest_hostlist(j->nodes, names, SLURMFATE_MAX_NODES);
    size_t i;
    json_t *nd;

    *host = -1;
    json_array_foreach(nodes, i, nd)
    {
        const char *name = json_string_value(json_object_get(nd, "name"));
        const char *state = json_string_value(json_object_get(nd, "state"));
        json_t *flags = json_object_get(nd, "state_flags"), *f;
        size_t fi;
        int lost = 0, at = -1;

        if (!name || !state)
            continue;
        for (int h = 0; h < k; h++)
            if (strcmp(names[h], name) == 0)
                at = h;
        if (at < 0)
            continue;
        lost = strcmp(state, "down") == 0 || strcmp(state, "error") == 0 ||
               strcmp(state, "future") == 0;
        json_array_foreach(flags, fi, f)
        {
            const char *fl = json_string_value(f);
            if (fl && strcmp(fl, "NOT_RESPONDING") == 0) /* DRAIN, FAIL: the job runs on */
                lost = 1;
        }
        if (lost) {
            snprintf(node, n, "%s", name);
            *host = at;
            return 1;
        }
    }
    return 0;
}

int slurmfate_node_addrs(const struct slurmrest_job *j, json_t *nodes,
                         char (*addrs)[SLURMFATE_ADDR_MAX], int max)
{
    char names[SLURMFATE_MAX_NODES][SLURMREST_NODE_MAX];
    int k = slurmrest_hostlist(j->nodes, names, SLURMFATE_MAX_NODES);

    if (k <= 0 || k > max)
        return -1;
    for (int h = 0; h < k; h++) {
        const char *addr = NULL;
        size_t i;
        json_t *nd;
        json_array_foreach(nodes, i, nd)
        {
            const char *name = json_string_value(json_object_get(nd, "name"));
            if (name && strcmp(name, names[h]) == 0)
                addr = json_string_value(json_object_get(nd, "address"));
        }
        if (!addr || !addr[0] || strlen(addr) >= SLURMFATE_ADDR_MAX)
            return -1;
        snprintf(addrs[h], SLURMFATE_ADDR_MAX, "%s", addr);
    }
    return k;
}
