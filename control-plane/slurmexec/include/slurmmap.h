/*
 * slurmmap.h - which Slurm partition and GPUs an instance type runs on, for the Slurm executor
 * (docs/slurm.md): the admin's map file, the defaults, and the check of both against the
 * cluster's partitions and nodes when the executor starts.
 *
 * Owns: the parsed map. The map file is a JSON object from instance type (or "*", any other
 * type) to {"partition": name, "gpus": per node, "gres": Slurm's GRES string}; every member is
 * optional. Without an entry, a type runs on the partition named as the type with '.' made '-'
 * (ml.p3.8xlarge on ml-p3-8xlarge), with the GPUs of the instance type (instances.h) as
 * "gpu:N". Thread-safety: a loaded map is read-only.
 */
#ifndef TY_SLURMEXEC_SLURMMAP_H
#define TY_SLURMEXEC_SLURMMAP_H

#include "ty_err.h"

#include <jansson.h>
#include <stddef.h>

struct slurmmap;

/* Where one instance type runs. */
struct slurmmap_entry {
    char partition[128]; /* never "" */
    int gpus;            /* per node (one node is one instance) */
    char gres[128];      /* per node, "" when no GPU */
    int from_map;        /* 1: the map named the type (or "*" did), 0: the default */
};

/* Loads the map file at path (NULL or "": no file, defaults only). new: slurmmap_free. NULL with
   err (TY_EINVAL, the file and what is wrong in it) when it cannot be read or is not a map. */
struct slurmmap *slurmmap_load(const char *path, struct ty_err *err);
void slurmmap_free(struct slurmmap *m);

/* Where type runs (see above). 0, or -TY_EINVAL for a type name that cannot name a
   partition. */
int slurmmap_lookup(const struct slurmmap *m, const char *type, struct slurmmap_entry *out,
                    struct ty_err *err);

/* The GPUs a node's GRES string ("gpu:2", "gpu:a100:8(S:0-1),gpu:t4:1", "(null)") holds. */
int slurmmap_gres_gpus(const char *gres);

/*
 * Checks every type the map names (and "*") against the cluster: its partition exists (in
 * partitions, GET /partitions' array), and one of its nodes (in nodes, GET /nodes' array) has
 * its GPUs. OUT: report, one line per problem ("ml.p3.8xlarge: no node of partition 'debug'
 * has 4 GPUs (the most: 2)"), truncated to n. Returns the number of problems.
 */
int slurmmap_check(const struct slurmmap *m, json_t *partitions, json_t *nodes, char *report,
                   size_t n);

#endif
