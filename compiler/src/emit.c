/* emit.c - emission of a session's training graph: the IR dump, the pass log, the CUDA C, the
 * C listing and the PTX (NVRTC). */
#include "cuda_int.h"
#include "model_int.h"

int tyc_session_emit(struct tyc_session *s, int what, char **out, struct tyc_err *err)
{
    struct tyc__buf b;
    int rc = 0;
    tyc__buf_init(&b, 64u << 20);
    switch (what) {
    case TYC_EMIT_IR:
        tyc__buf_printf(&b, "# training graph (%s), %d kernels, temp %zu bytes\n",
                        s->train.compiled ? "compiled" : "eager", s->train.g.nn,
                        s->train.temp_bytes);
        tyc__graph_dump(&s->train.g, &b);
        break;
    case TYC_EMIT_PASSLOG:
        tyc__buf_printf(&b, "%s", s->train.log.p ? s->train.log.p : "");
        break;
    case TYC_EMIT_CUDA:
        rc = tyc__cuda_codegen(&s->train.g, &b);
        break;
    case TYC_EMIT_C:
        tyc__c_listing(&s->train.g, &b);
        break;
    case TYC_EMIT_PTX: {
        char *ptx = NULL;
        int cached = 0;
        rc = tyc__cuda_codegen(&s->train.g, &b);
        if (rc == 0 && !b.oom)
            rc = tyc_nvrtc_compile(b.p, "compute_90", s->o.cache_dir, &ptx, &cached, err);
        tyc__buf_cleanup(&b);
        if (rc < 0)
            return rc;
        *out = ptx;
        return 0;
    }
    default:
        rc = -TYC_EINVAL;
    }
    if (rc == 0 && b.oom)
        rc = -TYC_ENOMEM;
    if (rc < 0) {
        tyc__buf_cleanup(&b);
        return tyc__err_set(err, -rc, "emit", "cannot emit: %s", tyc_strerror(rc));
    }
    *out = b.p ? b.p : tyc__strdup("");
    return 0;
}
