/* weights.c - weights files (weights.tyw): saving a session's parameters into a model
 * directory and loading them back into a session of the same model.
 *
 * weights.tyw: "TYW1" u32 count, then per tensor: u32 name_len, name bytes, u32 ndim,
 * u32 dims[ndim], float32 data (little endian, row-major). */
#include "model_int.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

static int wr32(FILE *f, uint32_t v)
{
    return fwrite(&v, 4, 1, f) == 1 ? 0 : -1;
}

int tyc_session_save(const struct tyc_session *s, const char *dir, struct tyc_err *err)
{
    char path[4096], tmp[4200];
    FILE *f;
    int i, bad = 0;
    if (tyc__session_sync_host((struct tyc_session *)(uintptr_t)s) < 0)
        return tyc__err_set(err, TYC_EGPU, "model_dir", "cannot copy parameters from the GPU");
    mkdir(dir, 0755);
    snprintf(path, sizeof(path), "%s/weights.tyw", dir);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "wb");
    if (!f)
        return tyc__err_set(err, TYC_EIO, "model_dir", "cannot write '%s': %s", tmp,
                            strerror(errno));
    bad |= fwrite("TYW1", 1, 4, f) != 4;
    bad |= wr32(f, (uint32_t)s->nparams);
    for (i = 0; i < s->nparams; i++) {
        const struct entry *e = &s->e[i];
        int d;
        bad |= wr32(f, (uint32_t)strlen(e->name));
        bad |= fwrite(e->name, 1, strlen(e->name), f) != strlen(e->name);
        bad |= wr32(f, (uint32_t)e->nd);
        for (d = 0; d < e->nd; d++)
            bad |= wr32(f, (uint32_t)e->dim[d]);
        bad |= fwrite(e->data, sizeof(float), e->numel, f) != e->numel;
    }
    bad |= fclose(f) != 0;
    if (bad || rename(tmp, path) != 0) {
        remove(tmp);
        return tyc__err_set(err, TYC_EIO, "model_dir", "cannot write '%s'", path);
    }
    return 0;
}

int tyc_session_load_weights(struct tyc_session *s, const char *path, struct tyc_err *err)
{
    FILE *f;
    char magic[4], name[256];
    uint32_t n, len, nd, d;
    int i, k;
    if (s->gpu)
        return tyc__err_set(err, TYC_EUNSUPPORTED, "weights",
                            "loading weights into a GPU session is not supported");
    f = fopen(path, "rb");
    if (!f)
        return tyc__err_set(err, TYC_EIO, "weights", "cannot open '%s': %s", path, strerror(errno));
    if (fread(magic, 1, 4, f) != 4 || memcmp(magic, "TYW1", 4) != 0 || fread(&n, 4, 1, f) != 1 ||
        n != (uint32_t)s->nparams)
        goto bad;
    for (i = 0; i < s->nparams; i++) {
        struct entry *e = &s->e[i];
        if (fread(&len, 4, 1, f) != 1 || len >= sizeof(name) || fread(name, 1, len, f) != len)
            goto bad;
        name[len] = 0;
        if (strcmp(name, e->name) != 0 || fread(&nd, 4, 1, f) != 1 || nd != (uint32_t)e->nd)
            goto bad;
        for (k = 0; k < e->nd; k++)
            if (fread(&d, 4, 1, f) != 1 || d != (uint32_t)e->dim[k])
                goto bad;
        if (fread(e->data, sizeof(float), e->numel, f) != e->numel)
            goto bad;
    }
    fclose(f);
    return 0;
bad:
    fclose(f);
    return tyc__err_set(err, TYC_EDATA, "weights", "'%s' does not match the model", path);
}
