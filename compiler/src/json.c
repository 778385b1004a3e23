/* json.c - a small JSON reader for model specs and hyperparameters.json, so trainyard-builtin
 * needs no JSON library. Owns the parsed tree. Depth and size are bounded (TJ_MAXDEPTH, 1 MiB of
 * input enforced by callers); \u escapes outside ASCII are decoded to UTF-8. */
#include "tyc_int.h"
#include <stdlib.h>
#include <string.h>

#define TJ_MAXDEPTH 32

struct parser {
    const char *s, *end, *p;
    struct tyc_err *err;
    int failed;
};

static int fail(struct parser *ps, const char *what)
{
    if (!ps->failed)
        tyc__err_set(ps->err, TYC_EINVAL, "json", "%s at offset %ld", what, (long)(ps->p - ps->s));
    ps->failed = 1;
    return -1;
}

static void ws(struct parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int value(struct parser *ps, struct tyc__json *j, int depth);

static int string(struct parser *ps, char **out)
{
    struct tyc__buf b;
    tyc__buf_init(&b, 1u << 20);
    ps->p++; /* opening quote */
    while (ps->p < ps->end && *ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        if (c < 0x20) {
            tyc__buf_cleanup(&b);
            return fail(ps, "control character in string");
        }
        if (c != '\\') {
            tyc__buf_printf(&b, "%c", c);
            continue;
        }
        if (ps->p >= ps->end)
            break;
        c = (unsigned char)*ps->p++;
        switch (c) {
        case 'n':
            tyc__buf_printf(&b, "\n");
            break;
        case 't':
            tyc__buf_printf(&b, "\t");
            break;
        case 'r':
            tyc__buf_printf(&b, "\r");
            break;
        case 'b':
            tyc__buf_printf(&b, "\b");
            break;
        case 'f':
            tyc__buf_printf(&b, "\f");
            break;
        case '"':
        case '\\':
        case '/':
            tyc__buf_printf(&b, "%c", c);
            break;
        case 'u': {
            unsigned v = 0;
            int i;
            if (ps->end - ps->p < 4) {
                tyc__buf_cleanup(&b);
                return fail(ps, "short \\u escape");
            }
            for (i = 0; i < 4; i++) {
                char h = *ps->p++;
                v <<= 4;
                if (h >= '0' && h <= '9')
                    v |= (unsigned)(h - '0');
                else if (h >= 'a' && h <= 'f')
                    v |= (unsigned)(h - 'a' + 10);
                else if (h >= 'A' && h <= 'F')
                    v |= (unsigned)(h - 'A' + 10);
                else {
                    tyc__buf_cleanup(&b);
                    return fail(ps, "bad \\u escape");
                }
            }
            if (v < 0x80)
                tyc__buf_printf(&b, "%c", (char)v);
            else if (v < 0x800)
                tyc__buf_printf(&b, "%c%c", (char)(0xc0 | (v >> 6)), (char)(0x80 | (v & 0x3f)));
            else
                tyc__buf_printf(&b, "%c%c%c", (char)(0xe0 | (v >> 12)),
                                (char)(0x80 | ((v >> 6) & 0x3f)), (char)(0x80 | (v & 0x3f)));
            break;
        }
        default:
            tyc__buf_cleanup(&b);
            return fail(ps, "bad escape");
        }
    }
    if (ps->p >= ps->end) {
        tyc__buf_cleanup(&b);
        return fail(ps, "unterminated string");
    }
    ps->p++;
    if (b.oom) {
        tyc__buf_cleanup(&b);
        return fail(ps, "string too long");
    }
    *out = b.p ? b.p : tyc__strdup("");
    return *out ? 0 : fail(ps, "out of memory");
}

static int push(struct parser *ps, struct tyc__json *j, int *cap)
{
    if (j->nkids == *cap) {
        int ncap = *cap ? *cap * 2 : 4;
        struct tyc__json *k;
        if (ncap > 100000)
            return fail(ps, "too many elements");
        k = tyc__realloc(j->kids, (size_t)ncap * sizeof(*k));
        if (!k)
            return fail(ps, "out of memory");
        j->kids = k;
        *cap = ncap;
    }
    memset(&j->kids[j->nkids], 0, sizeof(j->kids[0]));
    j->nkids++;
    return 0;
}

static int container(struct parser *ps, struct tyc__json *j, int depth, int obj)
{
    int cap = 0;
    char close = obj ? '}' : ']';
    j->type = obj ? TJ_OBJ : TJ_ARR;
    ps->p++;
    ws(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        return 0;
    }
    for (;;) {
        struct tyc__json *k;
        char *key = NULL;
        ws(ps);
        if (obj) {
            if (ps->p >= ps->end || *ps->p != '"')
                return fail(ps, "expected member name");
            if (string(ps, &key) < 0)
                return -1;
            ws(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                tyc__free(key);
                return fail(ps, "expected ':'");
            }
            ps->p++;
        }
        if (push(ps, j, &cap) < 0) {
            tyc__free(key);
            return -1;
        }
        k = &j->kids[j->nkids - 1];
        k->key = key;
        if (value(ps, k, depth + 1) < 0)
            return -1;
        ws(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            return 0;
        }
        return fail(ps, obj ? "expected ',' or '}'" : "expected ',' or ']'");
    }
}

static int lit(struct parser *ps, const char *w)
{
    size_t n = strlen(w);
    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, w, n) != 0)
        return fail(ps, "unexpected token");
    ps->p += n;
    return 0;
}

static int value(struct parser *ps, struct tyc__json *j, int depth)
{
    if (depth > TJ_MAXDEPTH)
        return fail(ps, "nesting too deep");
    ws(ps);
    if (ps->p >= ps->end)
        return fail(ps, "unexpected end of input");
    switch (*ps->p) {
    case '{':
        return container(ps, j, depth, 1);
    case '[':
        return container(ps, j, depth, 0);
    case '"':
        j->type = TJ_STR;
        return string(ps, &j->str);
    case 't':
        j->type = TJ_BOOL;
        j->num = 1;
        return lit(ps, "true");
    case 'f':
        j->type = TJ_BOOL;
        return lit(ps, "false");
    case 'n':
        j->type = TJ_NULL;
        return lit(ps, "null");
    default: {
        char tmp[64];
        size_t n = 0;
        char *endp;
        while (ps->p + n < ps->end && n < sizeof(tmp) - 1 && strchr("+-0123456789.eE", ps->p[n]))
            n++;
        if (n == 0)
            return fail(ps, "unexpected character");
        memcpy(tmp, ps->p, n);
        tmp[n] = 0;
        j->num = strtod(tmp, &endp);
        if (*endp)
            return fail(ps, "bad number");
        j->type = TJ_NUM;
        ps->p += n;
        return 0;
    }
    }
}

static void clear(struct tyc__json *j)
{
    int i;
    for (i = 0; i < j->nkids; i++)
        clear(&j->kids[i]);
    tyc__free(j->kids);
    tyc__free(j->str);
    tyc__free(j->key);
}

void tyc__json_free(struct tyc__json *j)
{
    if (!j)
        return;
    clear(j);
    tyc__free(j);
}

struct tyc__json *tyc__json_parse(const char *s, size_t len, struct tyc_err *err)
{
    struct parser ps = {s, s + len, s, err, 0};
    struct tyc__json *j = tyc__calloc(1, sizeof(*j));
    if (!j) {
        tyc__err_set(err, TYC_ENOMEM, "json", "out of memory");
        return NULL;
    }
    if (value(&ps, j, 0) == 0) {
        ws(&ps);
        if (ps.p != ps.end)
            fail(&ps, "trailing characters");
    }
    if (ps.failed) {
        tyc__json_free(j);
        return NULL;
    }
    return j;
}

const struct tyc__json *tyc__json_get(const struct tyc__json *o, const char *key)
{
    int i;
    if (!o || o->type != TJ_OBJ)
        return NULL;
    for (i = 0; i < o->nkids; i++)
        if (o->kids[i].key && strcmp(o->kids[i].key, key) == 0)
            return &o->kids[i];
    return NULL;
}
