/* data.c - IDX data sets (the MNIST/Fashion-MNIST format), gzip-compressed or not (zlib's gzread
 * reads both). Owns the loaded arrays. Images are u8 3-D IDX (magic 0x803), labels u8 1-D IDX
 * (magic 0x801); pixels are scaled to [0,1]. Every size is checked before it is trusted. */
#include "tyc_int.h"
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#ifdef TYC_WITH_ZLIB
#include <zlib.h>
#endif

#define TYC_MAX_EXAMPLES (1 << 24)

/* A reader over zlib's gzFile (reads gzip and plain files) or, without zlib, plain stdio. */
#ifdef TYC_WITH_ZLIB
typedef gzFile rdfile;
#define rd_open(path) gzopen((path), "rb")
#define rd_close(f)   gzclose(f)
#else
typedef FILE *rdfile;
#define rd_open(path) fopen((path), "rb")
#define rd_close(f)   fclose(f)
#endif

static int read_all(rdfile f, void *p, size_t n)
{
    unsigned char *c = p;
    while (n) {
        unsigned chunk = n > (1u << 30) ? (1u << 30) : (unsigned)n;
#ifdef TYC_WITH_ZLIB
        int r = gzread(f, c, chunk);
#else
        int r = (int)fread(c, 1, chunk, f);
#endif
        if (r <= 0)
            return -1;
        c += r;
        n -= (size_t)r;
    }
    return 0;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* OUT: *data new (caller frees), dims[]; returns 0 or an error with err set. */
static int read_idx(const char *path, int want_nd, uint8_t **data, uint32_t *dims,
                    struct tyc_err *err)
{
    rdfile f = rd_open(path);
    unsigned char hdr[16];
    size_t total = 1;
    int i;
    if (!f)
        return tyc__err_set(err, TYC_EIO, "data", "cannot open '%s': %s", path, strerror(errno));
    if (read_all(f, hdr, 4) < 0 || hdr[0] || hdr[1] || hdr[2] != 0x08 || hdr[3] != want_nd) {
#ifndef TYC_WITH_ZLIB
        if (hdr[0] == 0x1f && hdr[1] == 0x8b) {
            rd_close(f);
            return tyc__err_set(err, TYC_EDATA, "data",
                                "'%s' is gzip-compressed and this build has no zlib "
                                "(install zlib1g-dev and rebuild, or gunzip it)",
                                path);
        }
#endif
        rd_close(f);
        return tyc__err_set(err, TYC_EDATA, "data",
                            "'%s' is not an IDX file of unsigned bytes with %d dimensions", path,
                            want_nd);
    }
    if (read_all(f, hdr + 4, (size_t)want_nd * 4) < 0) {
        rd_close(f);
        return tyc__err_set(err, TYC_EDATA, "data", "'%s': truncated IDX header", path);
    }
    for (i = 0; i < want_nd; i++) {
        dims[i] = be32(hdr + 4 + 4 * i);
        if (dims[i] == 0 || dims[i] > TYC_MAX_EXAMPLES || total > ((size_t)1 << 34) / dims[i]) {
            rd_close(f);
            return tyc__err_set(err, TYC_EDATA, "data", "'%s': bad IDX dimension %u", path,
                                dims[i]);
        }
        total *= dims[i];
    }
    *data = tyc__malloc(total);
    if (!*data) {
        rd_close(f);
        return tyc__err_set(err, TYC_ENOMEM, "data", "out of memory reading '%s'", path);
    }
    if (read_all(f, *data, total) < 0) {
        rd_close(f);
        tyc__safefree(*data);
        return tyc__err_set(err, TYC_EDATA, "data", "'%s': truncated (expected %zu data bytes)",
                            path, total);
    }
    rd_close(f);
    return 0;
}

int tyc_dataset_load(struct tyc_dataset *ds, const char *images, const char *labels,
                     struct tyc_err *err)
{
    uint8_t *im = NULL, *lb = NULL;
    uint32_t di[3] = {0}, dl[1] = {0};
    size_t i, n;
    int rc;
    rc = read_idx(images, 3, &im, di, err);
    if (rc < 0)
        return rc;
    rc = read_idx(labels, 1, &lb, dl, err);
    if (rc < 0)
        goto fail;
    if (dl[0] != di[0]) {
        rc = tyc__err_set(err, TYC_EDATA, "data", "'%s' has %u images but '%s' has %u labels",
                          images, di[0], labels, dl[0]);
        goto fail;
    }
    memset(ds, 0, sizeof(*ds));
    ds->n = (int)di[0];
    ds->dim = (int)(di[1] * di[2]);
    n = (size_t)ds->n * (size_t)ds->dim;
    ds->x = tyc__malloc(n * sizeof(float));
    ds->y = tyc__malloc((size_t)ds->n * sizeof(int32_t));
    if (!ds->x || !ds->y) {
        tyc_dataset_cleanup(ds);
        rc = tyc__err_set(err, TYC_ENOMEM, "data", "out of memory");
        goto fail;
    }
    for (i = 0; i < n; i++)
        ds->x[i] = (float)im[i] / 255.0f;
    for (i = 0; i < (size_t)ds->n; i++)
        ds->y[i] = lb[i];
    rc = 0;
fail:
    tyc__free(im);
    tyc__free(lb);
    return rc;
}

static int has(const char *s, const char *w)
{
    return strstr(s, w) != NULL;
}

int tyc_dataset_load_dir(struct tyc_dataset *ds, const char *dir, const char *prefer,
                         struct tyc_err *err)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char im[256] = "", lb[256] = "", path1[4096], path2[4096];
    int nim = 0, nlb = 0, pim = 0, plb = 0;
    if (!d)
        return tyc__err_set(err, TYC_EDATA, "data", "cannot open channel directory '%s': %s", dir,
                            strerror(errno));
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        int pref = prefer && strncmp(n, prefer, strlen(prefer)) == 0;
        if (n[0] == '.' || strlen(n) >= sizeof(im))
            continue;
        if (has(n, "images") || has(n, "idx3")) {
            nim++;
            if (!im[0] || (pref && !pim)) {
                snprintf(im, sizeof(im), "%s", n);
                pim = pref;
            }
        } else if (has(n, "labels") || has(n, "idx1")) {
            nlb++;
            if (!lb[0] || (pref && !plb)) {
                snprintf(lb, sizeof(lb), "%s", n);
                plb = pref;
            }
        }
    }
    closedir(d);
    if (!im[0] || !lb[0])
        return tyc__err_set(err, TYC_EDATA, "data",
                            "channel '%s' needs an IDX images file and an IDX labels file "
                            "(names containing 'images'/'labels' or 'idx3'/'idx1')",
                            dir);
    if ((nim > 1 && !pim) || (nlb > 1 && !plb))
        return tyc__err_set(err, TYC_EDATA, "data",
                            "channel '%s' holds several IDX files and none starts with '%s'", dir,
                            prefer ? prefer : "");
    snprintf(path1, sizeof(path1), "%s/%s", dir, im);
    snprintf(path2, sizeof(path2), "%s/%s", dir, lb);
    tyc__log(2, "event=tyc.data images=%s labels=%s", path1, path2);
    return tyc_dataset_load(ds, path1, path2, err);
}

void tyc_dataset_cleanup(struct tyc_dataset *ds)
{
    tyc__safefree(ds->x);
    tyc__safefree(ds->y);
    ds->n = 0;
}
