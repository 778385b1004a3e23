/*
 * jsonmini.c - recursive-descent JSON reader behind jsonmini.h. Allocates with libc (the CLI's
 * allocator); bounded depth; rejects trailing garbage.
 */
#include "jsonmini.h"
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define JM_MAX_DEPTH 64

struct jm_ctx {
    const char *s;
    size_t len, pos;
    int depth;
};

static void ws(struct jm_ctx *c)
{
    while (c->pos < c->len && (c->s[c->pos] == ' ' || c->s[c->pos] == '\t' ||
                               c->s[c->pos] == '\n' || c->s[c->pos] == '\r'))
        c->pos++;
}

static void free_inner(struct jm_val *v)
{
    if (v->type == JM_STR)
        free(v->str);
    if (v->type == JM_ARR || v->type == JM_OBJ) {
        for (size_t i = 0; i < v->n; i++) {
            free_inner(&v->items[i]);
            if (v->keys)
                free(v->keys[i]);
        }
        free(v->items);
        free(v->keys);
    }
}

void jm_free(struct jm_val *v)
{
    if (!v)
        return;
    free_inner(v);
    free(v);
}

static void put_utf8(char *out, size_t *o, unsigned cp)
{
    if (cp < 0x80) {
        out[(*o)++] = (char)cp;
    } else if (cp < 0x800) {
        out[(*o)++] = (char)(0xC0 | (cp >> 6));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out[(*o)++] = (char)(0xE0 | (cp >> 12));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        out[(*o)++] = (char)(0xF0 | (cp >> 18));
        out[(*o)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[(*o)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[(*o)++] = (char)(0x80 | (cp & 0x3F));
    }
}

static int hex4(const char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = p[i];
        *v <<= 4;
        if (ch >= '0' && ch <= '9')
            *v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f')
            *v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F')
            *v |= (unsigned)(ch - 'A' + 10);
        else
            return -1;
    }
    return 0;
}

static char *parse_string(struct jm_ctx *c)
{
    if (c->pos >= c->len || c->s[c->pos] != '"')
        return NULL;
    size_t start = ++c->pos, end = start;
    while (end < c->len && c->s[end] != '"') {
        if (c->s[end] == '\\')
            end++;
        end++;
    }
    if (end >= c->len)
        return NULL;
    char *out = malloc(end - start + 1);
    size_t o = 0;
    if (!out)
        return NULL;
    for (size_t i = start; i < end; i++) {
        unsigned char ch = (unsigned char)c->s[i];
        if (ch < 0x20)
            goto bad;
        if (ch != '\\') {
            out[o++] = (char)ch;
            continue;
        }
        i++;
        switch (c->s[i]) {
        case '"':
        case '\\':
        case '/':
            out[o++] = c->s[i];
            break;
        case 'b':
            out[o++] = '\b';
            break;
        case 'f':
            out[o++] = '\f';
            break;
        case 'n':
            out[o++] = '\n';
            break;
        case 'r':
            out[o++] = '\r';
            break;
        case 't':
            out[o++] = '\t';
            break;
        case 'u': {
            unsigned cp, lo;
            if (i + 4 >= end || hex4(c->s + i + 1, &cp))
                goto bad;
            i += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && i + 6 < end && c->s[i + 1] == '\\' &&
                c->s[i + 2] == 'u' && !hex4(c->s + i + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            }
            put_utf8(out, &o, cp); /* ≤ 4 bytes for ≥ 6 input bytes */
            break;
        }
        default:
            goto bad;
        }
    }
    out[o] = '\0';
    c->pos = end + 1;
    return out;
bad:
    free(out);
    return NULL;
}

static int parse_value(struct jm_ctx *c, struct jm_val *v);

static int push(struct jm_val *v, size_t *cap, char *key, struct jm_val *item)
{
    if (v->n == *cap) {
        size_t nc = *cap ? *cap * 2 : 8;
        struct jm_val *ni = realloc(v->items, nc * sizeof(*ni));
        if (!ni)
            return -1;
        v->items = ni;
        if (v->type == JM_OBJ) {
            char **nk = realloc(v->keys, nc * sizeof(*nk));
            if (!nk)
                return -1;
            v->keys = nk;
        }
        *cap = nc;
    }
    if (v->type == JM_OBJ)
        v->keys[v->n] = key;
    v->items[v->n++] = *item;
    return 0;
}

static int parse_container(struct jm_ctx *c, struct jm_val *v, int obj)
{
    size_t cap = 0;
    char close = obj ? '}' : ']';
    v->type = obj ? JM_OBJ : JM_ARR;
    if (++c->depth > JM_MAX_DEPTH)
        return -1;
    c->pos++;
    ws(c);
    if (c->pos < c->len && c->s[c->pos] == close) {
        c->pos++;
        c->depth--;
        return 0;
    }
    for (;;) {
        char *key = NULL;
        struct jm_val item;
        memset(&item, 0, sizeof(item));
        ws(c);
        if (obj) {
            key = parse_string(c);
            if (!key)
                return -1;
            ws(c);
            if (c->pos >= c->len || c->s[c->pos] != ':') {
                free(key);
                return -1;
            }
            c->pos++;
        }
        if (parse_value(c, &item) != 0 || push(v, &cap, key, &item) != 0) {
            free(key);
            free_inner(&item);
            return -1;
        }
        ws(c);
        if (c->pos < c->len && c->s[c->pos] == ',') {
            c->pos++;
            continue;
        }
        if (c->pos < c->len && c->s[c->pos] == close) {
            c->pos++;
            c->depth--;
            return 0;
        }
        return -1;
    }
}

static int parse_value(struct jm_ctx *c, struct jm_val *v)
{
    ws(c);
    if (c->pos >= c->len)
        return -1;
    char ch = c->s[c->pos];
    if (ch == '{' || ch == '[')
        return parse_container(c, v, ch == '{');
    if (ch == '"') {
        v->type = JM_STR;
        v->str = parse_string(c);
        return v->str ? 0 : -1;
    }
    if (c->len - c->pos >= 4 && !strncmp(c->s + c->pos, "true", 4)) {
        v->type = JM_BOOL;
        v->num = 1;
        c->pos += 4;
        return 0;
    }
    if (c->len - c->pos >= 5 && !strncmp(c->s + c->pos, "false", 5)) {
        v->type = JM_BOOL;
        c->pos += 5;
        return 0;
    }
    if (c->len - c->pos >= 4 && !strncmp(c->s + c->pos, "null", 4)) {
        v->type = JM_NULL;
        c->pos += 4;
        return 0;
    }
    if (ch == '-' || (ch >= '0' && ch <= '9')) {
        char buf[64];
        size_t n = 0;
        while (c->pos + n < c->len && n < sizeof(buf) - 1 &&
               strchr("0123456789+-.eE", c->s[c->pos + n]))
            n++;
        memcpy(buf, c->s + c->pos, n);
        buf[n] = '\0';
        char *end;
        v->type = JM_NUM;
        v->num = strtod(buf, &end);
        if (end != buf + n || !isfinite(v->num))
            return -1;
        c->pos += n;
        return 0;
    }
    return -1;
}

struct jm_val *jm_parse(const char *text, size_t len, size_t *err_off)
{
    struct jm_ctx c = {text, len, 0, 0};
    struct jm_val *v = calloc(1, sizeof(*v));
    if (!v)
        return NULL;
    if (parse_value(&c, v) == 0) {
        ws(&c);
        if (c.pos == len)
            return v;
    }
    if (err_off)
        *err_off = c.pos;
    jm_free(v);
    return NULL;
}

const struct jm_val *jm_get(const struct jm_val *obj, const char *key)
{
    if (!obj || obj->type != JM_OBJ)
        return NULL;
    for (size_t i = 0; i < obj->n; i++)
        if (!strcmp(obj->keys[i], key))
            return &obj->items[i];
    return NULL;
}

const struct jm_val *jm_at(const struct jm_val *arr, size_t i)
{
    if (!arr || (arr->type != JM_ARR && arr->type != JM_OBJ) || i >= arr->n)
        return NULL;
    return &arr->items[i];
}

double jm_num(const struct jm_val *obj, const char *key, double def)
{
    const struct jm_val *v = jm_get(obj, key);
    return v && (v->type == JM_NUM || v->type == JM_BOOL) ? v->num : def;
}

const char *jm_str(const struct jm_val *obj, const char *key, const char *def)
{
    const struct jm_val *v = jm_get(obj, key);
    return v && v->type == JM_STR ? v->str : def;
}

char *jm_read_file(const char *path, size_t max, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (n + 65536 + 1 > cap) {
            cap = cap ? cap * 2 : 131072;
            char *nb = realloc(buf, cap);
            if (!nb)
                goto fail;
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n - 1, f);
        n += r;
        if (n > max)
            goto fail;
        if (r == 0)
            break;
    }
    if (ferror(f))
        goto fail;
    fclose(f);
    buf[n] = '\0';
    *len = n;
    return buf;
fail:
    fclose(f);
    free(buf);
    return NULL;
}
