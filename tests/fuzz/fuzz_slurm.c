/*
 * fuzz_slurm.c - libFuzzer harness for what the Slurm executor reads from slurmrestd: a job
 * answer (slurmrest_job_parse) and what its state means (slurmfate_decide, slurmfate_lost_node),
 * and Slurm's host lists (slurmrest_hostlist).
 *
 * Input layout: byte 0 flags (bit 0 seen_running, bit 1 stop_sent, bit 2 launchers_done, bit 3
 * a lost node known), then a JSON document: the job is its "jobs"[0], or the document itself;
 * its "nodes" member, when an array, is also read as GET /nodes' answer. The same bytes are
 * also a host list. Checks that every name is non-empty and NUL-terminated within its room, and
 * that a decision is one of the kinds with a message that fits.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "slurmfate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_slurm_hostlist(const char *s)
{
    char names[16][SLURMREST_NODE_MAX];
    int k = slurmrest_hostlist(s, names, 16);

    if (k < -1 || k > 16)
        abort();
    for (int i = 0; i < k; i++)
        if (!names[i][0] || !memchr(names[i], '\0', SLURMREST_NODE_MAX))
            abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct slurmfate_ctx c = {0};
    struct slurmrest_job j;
    struct slurmfate f;
    struct ty_err err;
    char *text, node[64];
    json_t *doc, *job;
    int host;

    if (size < 1)
        return 0;
    if (!(text = malloc(size)))
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    fuzz_slurm_hostlist(text);
    doc = json_loads(text, JSON_DECODE_ANY, NULL);
    free(text);
    if (!doc)
        return 0;
    job = json_array_get(json_object_get(doc, "jobs"), 0);
    if (!job)
        job = doc;
    if (slurmrest_job_parse(job, &j, &err) == 0) {
        c.slurm_id = j.id;
        c.instance_type = "ml.m5.xlarge";
        c.partition = "debug";
        c.hosts = 2;
        c.seen_running = data[0] & 1;
        c.stop_sent = (data[0] >> 1) & 1;
        c.launchers_done = (data[0] >> 2) & 1;
        c.lost_host = -1;
        if (data[0] & 8) {
            c.lost_node = "n2";
            c.lost_host = 1;
        }
        if (slurmfate_lost_node(&j, json_object_get(doc, "nodes"), node, sizeof(node), &host) &&
            (!node[0] || host < 0))
            abort();
        slurmfate_decide(&j, &c, &f);
        if (f.kind > SLURMFATE_FAIL || !memchr(f.msg, '\0', sizeof(f.msg)) ||
            (f.kind == SLURMFATE_FAIL && !f.msg[0]))
            abort();
    }
    json_decref(doc);
    return 0;
}
