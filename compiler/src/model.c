/* model.c - model specs: the built-in models, parsing a spec (JSON) or loading one by name or
 * path, and the spec's accessors. The layered models' fields are models_layers.c's, the
 * transformers' models_gpt.c's. */
#include "model_int.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TYC_MAX_SPEC (1u << 20)

static const char *builtin_gpt_tiny =
    "{\"name\": \"gpt-tiny\", \"type\": \"gpt\", \"vocab\": 128, \"context\": 64,\n"
    " \"width\": 128, \"heads\": 4, \"layers\": 2, \"mlp\": 512, \"dropout\": 0}\n";
static const char *builtin_bert_tiny =
    "{\"name\": \"bert-tiny\", \"type\": \"encoder\", \"vocab\": 128, \"context\": 64,\n"
    " \"width\": 128, \"heads\": 4, \"layers\": 2, \"mlp\": 512, \"dropout\": 0.1,\n"
    " \"classes\": 8}\n";

static const char *builtin_mlp =
    "{\"name\": \"mlp\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 256, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";
static const char *builtin_mlp_small =
    "{\"name\": \"mlp-small\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 64, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";
static const char *builtin_mlp_large =
    "{\"name\": \"mlp-large\", \"input\": [28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"dense\", \"units\": 1024, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 1024, \"activation\": \"relu\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";

static const char *builtin_cnn =
    "{\"name\": \"cnn\", \"input\": [1, 28, 28], \"classes\": 10,\n"
    " \"layers\": [{\"type\": \"conv2d\", \"filters\": 8, \"kernel\": 3, \"padding\": \"same\",\n"
    "             \"activation\": \"relu\"},\n"
    "            {\"type\": \"maxpool2d\", \"size\": 2},\n"
    "            {\"type\": \"conv2d\", \"filters\": 16, \"kernel\": 3, \"padding\": \"same\",\n"
    "             \"activation\": \"relu\"},\n"
    "            {\"type\": \"maxpool2d\", \"size\": 2},\n"
    "            {\"type\": \"flatten\"},\n"
    "            {\"type\": \"dense\", \"units\": 10}],\n"
    " \"loss\": \"softmax_cross_entropy\"}\n";

struct tyc_model *tyc_model_parse(const char *json, size_t len, struct tyc_err *err)
{
    struct tyc__json *j;
    const struct tyc__json *v;
    struct tyc_model *m = NULL;
    if (len > TYC_MAX_SPEC) {
        tyc__err_set(err, TYC_EMODEL, "model", "model spec is larger than %u bytes", TYC_MAX_SPEC);
        return NULL;
    }
    j = tyc__json_parse(json, len, err);
    if (!j) {
        if (err)
            err->code = TYC_EMODEL;
        return NULL;
    }
    if (j->type != TJ_OBJ) {
        tyc__err_set(err, TYC_EMODEL, "model", "model spec must be a JSON object");
        goto fail;
    }
    m = tyc__calloc(1, sizeof(*m));
    if (!m) {
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        goto fail;
    }
    v = tyc__json_get(j, "name");
    snprintf(m->name, sizeof(m->name), "%s", v && v->type == TJ_STR ? v->str : "model");
    if (tyc__json_get(j, "type")) {
        if (tyc__tf_parse(j, &m->tf, &m->classes, err) < 0)
            goto fail;
        m->input = m->tf.context;
    } else if (tyc__layers_parse(m, j, err) < 0) {
        goto fail;
    }
    m->json = tyc__malloc(len + 1);
    if (!m->json) {
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        goto fail;
    }
    memcpy(m->json, json, len);
    m->json[len] = 0;
    tyc__json_free(j);
    return m;
fail:
    tyc__json_free(j);
    tyc_model_free(m);
    return NULL;
}

struct tyc_model *tyc_model_load(const char *path, struct tyc_err *err)
{
    FILE *f;
    char *buf;
    size_t n;
    struct tyc_model *m;
    if (strcmp(path, "mlp") == 0)
        return tyc_model_parse(builtin_mlp, strlen(builtin_mlp), err);
    if (strcmp(path, "mlp-small") == 0)
        return tyc_model_parse(builtin_mlp_small, strlen(builtin_mlp_small), err);
    if (strcmp(path, "mlp-large") == 0)
        return tyc_model_parse(builtin_mlp_large, strlen(builtin_mlp_large), err);
    if (strcmp(path, "cnn") == 0)
        return tyc_model_parse(builtin_cnn, strlen(builtin_cnn), err);
    if (strcmp(path, "gpt-tiny") == 0)
        return tyc_model_parse(builtin_gpt_tiny, strlen(builtin_gpt_tiny), err);
    if (strcmp(path, "bert-tiny") == 0)
        return tyc_model_parse(builtin_bert_tiny, strlen(builtin_bert_tiny), err);
    f = fopen(path, "rb");
    if (!f) {
        tyc__err_set(err, TYC_EMODEL, "model",
                     "cannot open model '%s': %s (built-in models: mlp, mlp-small, mlp-large, cnn, "
                     "gpt-tiny, "
                     "bert-tiny)",
                     path, strerror(errno));
        return NULL;
    }
    buf = tyc__malloc(TYC_MAX_SPEC + 1);
    if (!buf) {
        fclose(f);
        tyc__err_set(err, TYC_ENOMEM, "model", "out of memory");
        return NULL;
    }
    n = fread(buf, 1, TYC_MAX_SPEC + 1, f);
    fclose(f);
    m = tyc_model_parse(buf, n, err);
    if (!m && err && err->code == TYC_EMODEL) {
        char tmp[sizeof(err->msg)];
        snprintf(tmp, sizeof(tmp), "%s", err->msg);
        snprintf(err->msg, sizeof(err->msg), "model '%.80s': %.160s", path, tmp);
    }
    tyc__free(buf);
    return m;
}

void tyc_model_free(struct tyc_model *m)
{
    if (!m)
        return;
    tyc__free(m->json);
    tyc__free(m);
}

const char *tyc_model_json(const struct tyc_model *m)
{
    return m->json;
}

int tyc_model_input_size(const struct tyc_model *m)
{
    return m->input;
}

int tyc_model_classes(const struct tyc_model *m)
{
    return m->classes;
}

int tyc_model_kind(const struct tyc_model *m)
{
    return m->tf.kind;
}

int tyc_model_labels_per_example(const struct tyc_model *m)
{
    return m->tf.kind == TYC_KIND_GPT ? m->tf.context : 1;
}
