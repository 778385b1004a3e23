/* data_text.c - text data for transformer models: every regular file of a channel directory
 * (sorted by name) read as bytes, bytes >= 128 mapped to '?', cut into windows of the model's
 * context. GPT: x = window, y = the window shifted by one (next-character targets); encoder: y =
 * the index of the window's file. */
#include "tyc_int.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define TEXT_MAX_FILES 256
#define TEXT_MAX_BYTES (64u << 20)

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Reads path into *buf (grown); OUT: *len. */
static int slurp(const char *path, unsigned char **buf, size_t *len, size_t *cap)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    if (!f)
        return -1;
    for (;;) {
        if (*cap - *len < 65536) {
            size_t nc = *cap ? *cap * 2 : 1u << 20;
            unsigned char *nb;
            if (nc > TEXT_MAX_BYTES + 65536 || !(nb = tyc__realloc(*buf, nc))) {
                fclose(f);
                return -2;
            }
            *buf = nb;
            *cap = nc;
        }
        n = fread(*buf + *len, 1, *cap - *len, f);
        *len += n;
        if (n == 0)
            break;
    }
    fclose(f);
    return 0;
}

int tyc_dataset_load_text(struct tyc_dataset *ds, const char *dir, const struct tyc_model *m,
                          struct tyc_err *err)
{
    char *names[TEXT_MAX_FILES];
    size_t starts[TEXT_MAX_FILES + 1], len = 0, cap = 0, i;
    unsigned char *buf = NULL;
    int nf = 0, k, T = tyc_model_input_size(m), gpt = tyc_model_kind(m) == TYC_KIND_GPT, rc;
    int n = 0, ex;
    struct stat st;
    memset(ds, 0, sizeof(*ds));
    if (stat(dir, &st) != 0)
        return tyc__err_set(err, TYC_EIO, "train", "cannot read '%s': %s", dir, strerror(errno));
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(dir);
        struct dirent *e;
        if (!d)
            return tyc__err_set(err, TYC_EIO, "train", "cannot open '%s': %s", dir,
                                strerror(errno));
        while ((e = readdir(d)) && nf < TEXT_MAX_FILES) {
            char p[4096];
            if (e->d_name[0] == '.')
                continue;
            snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
            if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
                continue;
            if (!(names[nf] = tyc__strdup(p)))
                break;
            nf++;
        }
        closedir(d);
        qsort(names, (size_t)nf, sizeof(names[0]), cmp_str);
    } else if ((names[0] = tyc__strdup(dir)))
        nf = 1;
    rc = 0;
    for (k = 0; k < nf && rc == 0; k++) {
        starts[k] = len;
        if (slurp(names[k], &buf, &len, &cap) < 0)
            rc = tyc__err_set(err, TYC_EIO, "train", "cannot read '%s' (or over %u MiB of text)",
                              names[k], TEXT_MAX_BYTES >> 20);
    }
    starts[nf] = len;
    if (rc < 0)
        goto out;
    if (nf == 0 || (!gpt && nf > tyc_model_classes(m))) {
        rc = tyc__err_set(err, TYC_EDATA, "train",
                          nf ? "'%s' has %d files but the encoder has %d classes (one per file)"
                             : "'%s' has no readable files",
                          dir, nf, tyc_model_classes(m));
        goto out;
    }
    for (i = 0; i < len; i++)
        if (buf[i] >= 128)
            buf[i] = '?';
    /* count windows */
    for (k = 0; k < nf; k++) {
        size_t flen = starts[k + 1] - starts[k];
        if (gpt)
            continue;
        n += (int)(flen / (size_t)T);
    }
    if (gpt)
        n = len > 1 ? (int)((len - 1) / (size_t)T) : 0;
    if (n < 1) {
        rc = tyc__err_set(err, TYC_EDATA, "train", "'%s' holds less text than one %d-byte window",
                          dir, T + gpt);
        goto out;
    }
    ds->n = n;
    ds->dim = T;
    ds->ylen = gpt ? T : 1;
    ds->x = tyc__malloc((size_t)n * T * sizeof(float));
    ds->y = tyc__malloc((size_t)n * ds->ylen * sizeof(int32_t));
    if (!ds->x || !ds->y) {
        rc = tyc__err_set(err, TYC_ENOMEM, "train", "out of memory");
        goto out;
    }
    ex = 0;
    if (gpt)
        for (ex = 0; ex < n; ex++)
            for (k = 0; k < T; k++) {
                ds->x[(size_t)ex * T + k] = (float)buf[(size_t)ex * T + k];
                ds->y[(size_t)ex * T + k] = buf[(size_t)ex * T + k + 1];
            }
    else
        for (k = 0; k < nf; k++) {
            size_t off;
            for (off = starts[k]; off + (size_t)T <= starts[k + 1]; off += (size_t)T, ex++) {
                int j;
                for (j = 0; j < T; j++)
                    ds->x[(size_t)ex * T + j] = (float)buf[off + j];
                ds->y[ex] = k;
            }
        }
out:
    for (k = 0; k < nf; k++)
        tyc__free(names[k]);
    tyc__free(buf);
    if (rc < 0)
        tyc_dataset_cleanup(ds);
    return rc;
}
