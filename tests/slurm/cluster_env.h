/*
 * cluster_env.h - what the live Slurm tests (test_slurm_live.c, test_launcher_live.c) share
 * about the test cluster of cluster.sh: reading DIR/cluster.env, a short sleep, and bringing
 * n2 back in service after a test set it down. Header-only: each test is one file.
 * Include after cmocka.h and slurmrest.h.
 */
#ifndef TY_TESTS_SLURM_CLUSTER_ENV_H
#define TY_TESTS_SLURM_CLUSTER_ENV_H

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The cluster as cluster.sh up wrote it. */
struct cluster_env {
    char rest_url[1024], jwt_key[1024], jobs_dir[1024], slurm_conf[1024];
};

/* Reads path (DIR/cluster.env) into e; exits 1 when it cannot (the fixture failed). */
static void cluster_env_read(const char *prog, const char *path, struct cluster_env *e)
{
    static const struct {
        const char *key;
        size_t off;
    } keys[] = {
        {"SLURM_REST_URL=", offsetof(struct cluster_env, rest_url)},
        {"SLURM_JWT_KEY=", offsetof(struct cluster_env, jwt_key)},
        {"SLURM_JOBS_DIR=", offsetof(struct cluster_env, jobs_dir)},
        {"SLURM_CONF=", offsetof(struct cluster_env, slurm_conf)},
    };
    char line[1000];
    FILE *f = fopen(path, "r");

    if (!f) {
        fprintf(stderr, "%s: cannot read %s (cluster.sh up failed?)\n", prog, path);
        exit(1);
    }
    memset(e, 0, sizeof(*e));
    while (fgets(line, sizeof(line), f)) {
        line[strcspn(line, "\n")] = '\0';
        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
            if (strncmp(line, keys[i].key, strlen(keys[i].key)) == 0)
                snprintf((char *)e + keys[i].off, 1024, "%s", line + strlen(keys[i].key));
    }
    fclose(f);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Puts n2 back in service (ReturnToService=2 may have done it already: then resume is refused)
   and fails unless it is idle within 10 s. SLURM_CONF must be set. */
static void cluster_n2_resume(const char *prog, struct slurmrest *sr)
{
    struct ty_err err;

    if (system("scontrol update nodename=n2 state=resume 2>/dev/null") != 0)
        fprintf(stderr, "%s: n2 was back in service already\n", prog);
    for (int i = 0; i < 100; i++) {
        json_t *nodes = slurmrest_nodes(sr, &err);
        const char *st = json_string_value(json_object_get(json_array_get(nodes, 1), "state"));
        int up = st && strcmp(st, "idle") == 0;
        json_decref(nodes);
        if (up)
            return;
        nap_ms(100);
    }
    fail_msg("n2 is not idle again");
}

#endif
