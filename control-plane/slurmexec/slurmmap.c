/*
 * slurmmap.c - the instance type to partition map of the Slurm executor (slurmmap.h).
 */
#include "slurmmap.h"

#include "instances.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct slurmmap {
    json_t *map; /* owned: type -> entry, checked by slurmmap_load */
};

/* 1 when s can be a partition's name or a GRES string: letters, digits and "._-:" only. */
static int map_word_ok(const char *s, size_t max)
{
    size_t n = s ? strlen(s) : 0;
    return n > 0 && n < max &&
           strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-:") == n;
}

/* Checks one entry of the file. 0, or -TY_EINVAL naming the type and the member. */
static int map_entry_check(const char *path, const char *type, json_t *e, struct ty_err *err)
{
    json_t *p = json_object_get(e, "partition"), *g = json_object_get(e, "gpus"),
           *r = json_object_get(e, "gres");
    const char *k;
    json_t *v;

    if (!json_is_object(e))
        return ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                          "%s: \"%s\" must be an object with partition, gpus, gres", path, type);
    json_object_foreach(e, k, v)
    {
        if (strcmp(k, "partition") != 0 && strcmp(k, "gpus") != 0 && strcmp(k, "gres") != 0)
            return ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                              "%s: \"%s\" has an unknown member \"%s\" (partition, gpus, gres)",
                              path, type, k);
    }
    if (p && (!json_is_string(p) ||
              !map_word_ok(json_string_value(p), sizeof(((struct slurmmap_entry *)0)->partition))))
        return ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                          "%s: \"%s\".partition must be a partition's name", path, type);
    if (g && (!json_is_integer(g) || json_integer_value(g) < 0 || json_integer_value(g) > 64))
        return ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                          "%s: \"%s\".gpus must be a whole number from 0 to 64", path, type);
    if (r && (!json_is_string(r) ||
              (json_string_value(r)[0] &&
               !map_word_ok(json_string_value(r), sizeof(((struct slurmmap_entry *)0)->gres)))))
        return ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                          "%s: \"%s\".gres must be a GRES string such as gpu:a100:8", path, type);
    return 0;
}

struct slurmmap *slurmmap_load(const char *path, struct ty_err *err)
{
    struct slurmmap *m = calloc(1, sizeof(*m));
    json_error_t je;
    const char *type;
    json_t *e;

    if (!m) {
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    if (!path || !path[0]) {
        m->map = json_object();
        return m;
    }
    m->map = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!m->map) {
        ty_err_set(err, TY_EINVAL, "slurm-instance-map", "%s: %s (line %d)", path, je.text,
                   je.line);
        goto fail;
    }
    if (!json_is_object(m->map)) {
        ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                   "%s: must be a JSON object from instance type to its partition", path);
        goto fail;
    }
    json_object_foreach(m->map, type, e)
    {
        if (strcmp(type, "*") != 0 && !instances_lookup(type)) {
            ty_err_set(err, TY_EINVAL, "slurm-instance-map",
                       "%s: \"%s\" is not an instance type trainyard knows", path, type);
            goto fail;
        }
        if (map_entry_check(path, type, e, err) != 0)
            goto fail;
    }
    return m;
fail:
    slurmmap_free(m);
    return NULL;
}

void slurmmap_free(struct slurmmap *m)
{
    if (!m)
        return;
    json_decref(m->map);
    free(m);
}

int slurmmap_lookup(const struct slurmmap *m, const char *type, struct slurmmap_entry *out,
                    struct ty_err *err)
{
    const struct instances_type *it = instances_lookup(type);
    json_t *e = json_object_get(m->map, type);
    const char *v;

    memset(out, 0, sizeof(*out));
    if (!e)
        e = json_object_get(m->map, "*");
    out->from_map = e != NULL;
    if ((v = json_string_value(json_object_get(e, "partition")))) {
        snprintf(out->partition, sizeof(out->partition), "%s", v);
    } else {
        if (!map_word_ok(type, sizeof(out->partition)))
            return ty_err_set(err, TY_EINVAL, "InstanceType",
                              "instance type '%s' cannot name a Slurm partition", type ? type : "");
        snprintf(out->partition, sizeof(out->partition), "%s", type);
        for (char *p = out->partition; *p; p++)
            if (*p == '.')
                *p = '-';
    }
    out->gpus = json_is_integer(json_object_get(e, "gpus"))
                    ? (int)json_integer_value(json_object_get(e, "gpus"))
                    : (it ? it->gpus : 0);
    if ((v = json_string_value(json_object_get(e, "gres"))))
        snprintf(out->gres, sizeof(out->gres), "%s", v);
    else if (out->gpus > 0)
        snprintf(out->gres, sizeof(out->gres), "gpu:%d", out->gpus);
    if (!json_is_integer(json_object_get(e, "gpus")) && json_object_get(e, "gres"))
        out->gpus = slurmmap_gres_gpus(out->gres);
    return 0;
}

int slurmmap_gres_gpus(const char *gres)
{
    int total = 0;
    const char *p = gres;

    while (p && *p) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len > 3 && strncmp(p, "gpu:", 4) == 0) {
            /* gpu[:type]:count[(...)]: the count is the last field before any '(' */
            const char *paren = memchr(p, '(', len);
            const char *stop = paren ? paren : p + len;
            const char *colon = stop;
            while (colon > p && colon[-1] != ':')
                colon--;
            if (colon > p && colon < stop) {
                long c = strtol(colon, NULL, 10); /* a run of digits ends at stop */
                total += c > 0 && c < 1024 ? (int)c : 0;
            }
        }
        p = end ? end + 1 : NULL;
    }
    return total;
}

/* The most GPUs one node of partition has (-1 when the partition has no node in nodes). */
static int map_most_gpus(json_t *nodes, const char *partition)
{
    int most = -1;
    size_t i, k;
    json_t *n, *p;

    json_array_foreach(nodes, i, n)
    {
        json_array_foreach(json_object_get(n, "partitions"), k, p)
        {
            const char *name = json_string_value(p);
            if (name && strcmp(name, partition) == 0) {
                int g = slurmmap_gres_gpus(json_string_value(json_object_get(n, "gres")));
                most = g > most ? g : most;
            }
        }
    }
    return most;
}

static int map_has_partition(json_t *partitions, const char *name)
{
    size_t i;
    json_t *p;

    json_array_foreach(partitions, i, p)
    {
        const char *n = json_string_value(json_object_get(p, "name"));
        if (n && strcmp(n, name) == 0)
            return 1;
    }
    return 0;
}

int slurmmap_check(const struct slurmmap *m, json_t *partitions, json_t *nodes, char *report,
                   size_t n)
{
    const char *type;
    json_t *e;
    size_t used = 0;
    int problems = 0;

    if (n)
        report[0] = '\0';
    json_object_foreach(m->map, type, e)
    {
        struct slurmmap_entry en;
        char line[512];
        int most;
        (void)e;
        if (slurmmap_lookup(m, strcmp(type, "*") == 0 ? "" : type, &en, NULL) != 0)
            continue;
        if (strcmp(type, "*") == 0 && !json_object_get(e, "partition"))
            continue; /* "*" without a partition: each type's own default, checked at submit */
        if (!map_has_partition(partitions, en.partition))
            snprintf(line, sizeof(line), "%s: partition '%s' does not exist\n", type, en.partition);
        else if ((most = map_most_gpus(nodes, en.partition)) < en.gpus)
            snprintf(line, sizeof(line),
                     "%s: no node of partition '%s' has %d GPU%s (the most: %d)\n", type,
                     en.partition, en.gpus, en.gpus == 1 ? "" : "s", most < 0 ? 0 : most);
        else
            continue;
        problems++;
        if (used < n) {
            snprintf(report + used, n - used, "%s", line);
            used += strlen(report + used);
        }
    }
    return problems;
}
