/*
 * tags.c - AddTags, ListTags, DeleteTags on any SageMaker resource, keyed by its ARN.
 *
 * Owns: ListTags paging (NextToken is the decimal offset into the key-sorted tag list).
 * Tags are stored by store.c; resource existence is not checked here (see the note in the
 * README's limits).
 */
#include "ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int op_tags_key_reserved(const char *k, struct ty_err *err)
{
    if (!k || (strncasecmp(k, "aws:", 4) != 0 && strncasecmp(k, "sagemaker:", 10) != 0))
        return 0;
    return ty_err_set(err, TY_EINVAL, "Tags",
                      "Invalid tag key '%.128s': tag keys starting with 'aws:' or 'sagemaker:' "
                      "are reserved for system use.",
                      k);
}

int op_tags_dup_key(json_t *tags, const char **dup)
{
    size_t n = json_array_size(tags);

    for (size_t i = 1; i < n; i++) {
        const char *a = json_string_value(json_object_get(json_array_get(tags, i), "Key"));
        for (size_t j = 0; a && j < i; j++) {
            const char *b = json_string_value(json_object_get(json_array_get(tags, j), "Key"));
            if (b && strcasecmp(a, b) == 0) {
                *dup = a;
                return 1;
            }
        }
    }
    return 0;
}

int op_tags_reserved(const char *service, const char *op, json_t *in, struct ty_err *err)
{
    const char *dup;
    json_t *v;
    size_t i;
    int rc;

    if (!service || strcmp(service, "sagemaker") != 0)
        return 0;
    json_array_foreach(json_object_get(in, "Tags"), i, v)
    {
        if ((rc = op_tags_key_reserved(json_string_value(json_object_get(v, "Key")), err)) != 0)
            return rc;
    }
    /* one key twice would let authorisation read one value (aws:RequestTag) and the store keep
       the other; keys compare as condition keys do, case-insensitively */
    if (op_tags_dup_key(json_object_get(in, "Tags"), &dup))
        return ty_err_set(err, TY_EINVAL, "Tags",
                          "Duplicate tag key '%.128s': tag keys must be unique (case-insensitive).",
                          dup);
    if (op && strcmp(op, "DeleteTags") == 0)
        json_array_foreach(json_object_get(in, "TagKeys"), i, v)
        {
            if ((rc = op_tags_key_reserved(json_string_value(v), err)) != 0)
                return rc;
        }
    return 0;
}

int op_tags_add(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    json_t *tags = json_object_get(in, "Tags");
    int rc = store_tags_add(ctx->store, json_string_value(json_object_get(in, "ResourceArn")), tags,
                            err);
    if (rc)
        return rc;
    *out = json_pack("{s:O}", "Tags", tags);
    return 0;
}

int op_tags_list(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    const char *token = json_string_value(json_object_get(in, "NextToken"));
    json_t *mr = json_object_get(in, "MaxResults");
    long max = mr ? (long)json_integer_value(mr) : 50;
    long start = 0;
    json_t *all, *page;
    size_t n;

    if (token) {
        char *end;
        start = strtol(token, &end, 10);
        if (*end || start < 0)
            return ty_err_set(err, TY_EINVAL, "NextToken", "Invalid pagination token");
    }
    all = store_tags_list(ctx->store, json_string_value(json_object_get(in, "ResourceArn")), err);
    if (!all)
        return -err->code;
    n = json_array_size(all);
    page = json_array();
    for (size_t i = (size_t)start; i < n && (long)(i - (size_t)start) < max; i++)
        json_array_append(page, json_array_get(all, i));
    *out = json_pack("{s:o}", "Tags", page);
    if ((size_t)start + (size_t)max < n) {
        char buf[32];
        snprintf(buf, sizeof(buf), "%ld", start + max);
        json_object_set_new(*out, "NextToken", json_string(buf));
    }
    json_decref(all);
    return 0;
}

int op_tags_delete(struct op_ctx *ctx, json_t *in, json_t **out, struct ty_err *err)
{
    int rc = store_tags_delete(ctx->store, json_string_value(json_object_get(in, "ResourceArn")),
                               json_object_get(in, "TagKeys"), err);
    if (rc)
        return rc;
    *out = json_object();
    return 0;
}
