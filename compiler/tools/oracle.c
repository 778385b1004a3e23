/* oracle.c - tyc-oracle: runs a libtyc session on given data and writes what the PyTorch parity
 * test (tests/parity_torch.py) compares: the initial weights (a saved model), the logits of the
 * first batch before and after training, the loss of every step, the first step's gradients (eager
 * mode) and the final weights. Owns nothing past main().
 *
 * usage: tyc-oracle MODEL OUTDIR --x X.bin --y Y.bin [--batch B] [--steps N]
 *        [--optimizer adam|sgd] [--lr LR] [--momentum M] [--mode eager|compiled] [--threads T]
 *        [--eps EPS] [--init WEIGHTS.tyw]
 * Without --x/--y: 2 batches of deterministic synthetic data (an LCG, as tyc bench).
 * X.bin: float32 rows (input_size floats each), Y.bin: int32 labels; step k uses batch
 * (k mod nbatches). Writes OUTDIR/init/, OUTDIR/final/ (model.json + weights.tyw),
 * logits0.bin, logits1.bin, loss.bin (float32) and grads.tyw (eager mode only).
 */
#include "tyc.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long len;
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc(len > 0 ? (size_t)len : 1);
    if (buf && fread(buf, 1, (size_t)len, f) != (size_t)len) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *n = (size_t)len;
    return buf;
}

static int dump(const char *dir, const char *name, const void *p, size_t bytes)
{
    char path[4096];
    FILE *f;
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(p, 1, bytes, f) != bytes) {
        if (f)
            fclose(f);
        return -1;
    }
    return fclose(f);
}

static int wr32(FILE *f, uint32_t v)
{
    return fwrite(&v, 4, 1, f) == 1 ? 0 : -1;
}

/* grads.tyw: the weights file format with the gradients of the last step */
static int dump_grads(struct tyc_session *s, const char *dir)
{
    char path[4096];
    FILE *f;
    int i, bad = 0;
    snprintf(path, sizeof(path), "%s/grads.tyw", dir);
    f = fopen(path, "wb");
    if (!f)
        return -1;
    bad |= fwrite("TYW1", 1, 4, f) != 4;
    bad |= wr32(f, (uint32_t)tyc_session_param_count(s));
    for (i = 0; i < tyc_session_param_count(s); i++) {
        float *g, *p;
        size_t n, np;
        int nd, dims[4], d;
        const char *name = tyc_session_param(s, i, &p, &np);
        if (!tyc_session_grad(s, i, &g, &n) || n != np ||
            tyc_session_param_shape(s, i, &nd, dims) < 0) {
            fclose(f);
            return -1;
        }
        bad |= wr32(f, (uint32_t)strlen(name));
        bad |= fwrite(name, 1, strlen(name), f) != strlen(name);
        bad |= wr32(f, (uint32_t)nd);
        for (d = 0; d < nd; d++)
            bad |= wr32(f, (uint32_t)dims[d]);
        bad |= fwrite(g, sizeof(float), n, f) != n;
    }
    bad |= fclose(f) != 0;
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    const char *model = NULL, *out = NULL, *xp = NULL, *yp = NULL, *init = NULL;
    struct tyc_options o;
    struct tyc_err err = {0};
    struct tyc_model *m = NULL;
    struct tyc_session *s = NULL;
    float *x = NULL, *lg = NULL, *losses = NULL;
    int32_t *y = NULL;
    size_t xn = 0, yn = 0;
    int i, steps = 3, in, C, nb, rc = 1;
    char sub[4200];
    tyc_options_init(&o);
    o.batch = 8;
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--x") && v)
            xp = argv[++i];
        else if (!strcmp(a, "--y") && v)
            yp = argv[++i];
        else if (!strcmp(a, "--batch") && v)
            o.batch = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--steps") && v)
            steps = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--optimizer") && v)
            o.optimizer = !strcmp(argv[++i], "sgd") ? TYC_SGD : TYC_ADAM;
        else if (!strcmp(a, "--lr") && v)
            o.lr = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--eps") && v)
            o.eps = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--momentum") && v)
            o.momentum = strtof(argv[++i], NULL);
        else if (!strcmp(a, "--mode") && v)
            o.mode = !strcmp(argv[++i], "eager") ? TYC_EAGER : TYC_COMPILED;
        else if (!strcmp(a, "--threads") && v)
            o.threads = (int)strtol(argv[++i], NULL, 10);
        else if (!strcmp(a, "--init") && v)
            init = argv[++i];
        else if (a[0] != '-' && !model)
            model = a;
        else if (a[0] != '-' && !out)
            out = a;
        else {
            fprintf(stderr, "tyc-oracle: bad argument '%s'\n", a);
            return 2;
        }
    }
    if (!model || !out || !xp != !yp || steps < 1) {
        fprintf(stderr, "usage: tyc-oracle MODEL OUTDIR --x X.bin --y Y.bin [options]\n");
        return 2;
    }
    o.eager_cache = o.mode == TYC_EAGER; /* keeps the gradients readable after a step */
    m = tyc_model_load(model, &err);
    if (!m)
        goto fail;
    s = tyc_session_new(m, &o, &err);
    if (!s)
        goto fail;
    in = tyc_model_input_size(m);
    C = tyc_model_classes(m);
    if (xp) {
        x = slurp(xp, &xn);
        y = slurp(yp, &yn);
    } else {
        uint32_t seed = 12345;
        size_t k;
        xn = (size_t)2 * o.batch * in * 4;
        yn = (size_t)2 * o.batch * 4;
        x = malloc(xn);
        y = malloc(yn);
        for (k = 0; x && k < xn / 4; k++) {
            seed = seed * 1664525u + 1013904223u;
            x[k] = (float)(seed >> 8) / 16777216.0f;
        }
        for (k = 0; y && k < yn / 4; k++)
            y[k] = (int32_t)((k * 7) % (size_t)C);
    }
    if (!x || !y || xn % ((size_t)o.batch * in * 4) || yn != xn / ((size_t)in * 4) * 4) {
        snprintf(err.msg, sizeof(err.msg), "x/y files do not hold whole batches");
        goto fail;
    }
    nb = (int)(xn / ((size_t)o.batch * in * 4));
    if (init && tyc_session_load_weights(s, init, &err) < 0)
        goto fail;
    mkdir(out, 0755);
    snprintf(sub, sizeof(sub), "%s/init", out);
    if (tyc_session_save(s, sub, &err) < 0 ||
        dump(sub, "model.json", tyc_model_json(m), strlen(tyc_model_json(m))) < 0)
        goto fail;
    lg = malloc((size_t)o.batch * C * sizeof(float));
    losses = malloc((size_t)steps * sizeof(float));
    if (!lg || !losses || tyc_session_logits(s, x, o.batch, lg) < 0 ||
        dump(out, "logits0.bin", lg, (size_t)o.batch * C * sizeof(float)) < 0)
        goto fail;
    for (i = 0; i < steps; i++) {
        int b = i % nb;
        if (tyc_session_step(s, x + (size_t)b * o.batch * in, y + (size_t)b * o.batch, &losses[i]) <
            0) {
            snprintf(err.msg, sizeof(err.msg), "step %d failed", i);
            goto fail;
        }
        if (i == 0 && o.mode == TYC_EAGER && dump_grads(s, out) < 0) {
            snprintf(err.msg, sizeof(err.msg), "cannot write grads.tyw");
            goto fail;
        }
    }
    snprintf(sub, sizeof(sub), "%s/final", out);
    if (dump(out, "loss.bin", losses, (size_t)steps * sizeof(float)) < 0 ||
        tyc_session_save(s, sub, &err) < 0 ||
        dump(sub, "model.json", tyc_model_json(m), strlen(tyc_model_json(m))) < 0 ||
        tyc_session_logits(s, x, o.batch, lg) < 0 ||
        dump(out, "logits1.bin", lg, (size_t)o.batch * C * sizeof(float)) < 0)
        goto fail;
    rc = 0;
fail:
    if (rc)
        fprintf(stderr, "tyc-oracle: %s\n", err.msg[0] ? err.msg : "failed");
    tyc_session_free(s);
    tyc_model_free(m);
    free(x);
    free(y);
    free(lg);
    free(losses);
    return rc;
}
