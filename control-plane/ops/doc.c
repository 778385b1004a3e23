/*
 * doc.c - small accessors of the JSON documents the operations read and answer (ops.h), shared
 * by ops/training.c and ops/studio.c.
 */
#include "ops.h"

const char *op_str(json_t *in, const char *key)
{
    return json_string_value(json_object_get(in, key));
}

void op_copy(json_t *dst, json_t *src, const char *key)
{
    json_t *v = json_object_get(src, key);
    if (v)
        json_object_set(dst, key, v);
}

json_t *op_public(json_t *doc)
{
    const char *key;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(doc, tmp, key, v)
    {
        if (key[0] == '_')
            json_object_del(doc, key);
    }
    return doc;
}
