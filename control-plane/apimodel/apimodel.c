/*
 * apimodel.c - the service-model subset (the api/ JSON files) compiled into shape tables, and
 * request validation against them with AWS's messages.
 *
 * Owns: struct apimodel (services → operations → shapes, resolved to pointers at load time) and
 * the PCRE2 code of every pattern, compiled once per shape at load. Does not own the request
 * being validated (borrowed) nor the wire form of errors (route.c).
 * Invariants: a loaded model is never written again, so any number of threads may validate
 * against it at once; each validation creates its own PCRE2 match data. Validation recursion is
 * bounded by MODEL_MAX_DEPTH, messages by MODEL_MAX_MSG, rendered values by MODEL_MAX_VALUE.
 *
 * Patterns: AWS (Coral, Java) checks a member's pattern with a whole-value match (Java's
 * String.matches), whether or not the pattern is written with ^ and $: that is why
 * 'bad_name!' fails ^[a-zA-Z0-9](-*[a-zA-Z0-9]){0,62}, and why SingleSignOnUserIdentifier's
 * pattern "UserName" admits only that word. We do the same with PCRE2_ANCHORED|ENDANCHORED.
 */
#include "apimodel.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ty_buf.h"
#include "ty_codec.h"
#include "ty_log.h"

#define MODEL_MAX_DEPTH   64          /* nesting levels of a request we look into */
#define MODEL_MAX_MSG     (64 * 1024) /* joined validation messages */
#define MODEL_MAX_VALUE   4096        /* one rendered value */
#define MODEL_MAX_PATH    512         /* one member path */
#define MODEL_MAX_ERRORS  100         /* errors listed; all are counted */
#define MODEL_MATCH_LIMIT 200000      /* PCRE2 backtracking bound per pattern match */

enum apimodel__type {
    MT_STRUCTURE,
    MT_STRING,
    MT_INTEGER,
    MT_LONG,
    MT_FLOAT,
    MT_DOUBLE,
    MT_BOOLEAN,
    MT_TIMESTAMP,
    MT_LIST,
    MT_MAP,
    MT_BLOB,
    MT_OTHER /* a type we do not know: anything is accepted */
};

struct apimodel__shape;

struct apimodel__member {
    char *name; /* wire name, "TrainingJobName" */
    char *path; /* lowerCamelCase, "trainingJobName" */
    struct apimodel__shape *shape;
    int required;
};

struct apimodel__shape {
    char *name;
    enum apimodel__type type;
    int has_min, has_max;
    double min, max; /* lengths, counts or values */
    char **enums;
    size_t nenums;
    char *pattern;
    pcre2_code *re; /* NULL when there is no pattern or it did not compile */
    struct apimodel__member *members;
    size_t nmembers;
    struct apimodel__shape *member, *key, *value;
};

struct apimodel__op {
    char *name;
    struct apimodel__shape *input; /* NULL: the operation takes no input */
};

struct apimodel__service {
    char *name; /* metadata.signingName */
    struct apimodel__shape *shapes;
    size_t nshapes;
    struct apimodel__op *ops;
    size_t nops;
};

struct apimodel {
    struct apimodel__service *svcs;
    size_t nsvcs;
    pcre2_match_context *mctx;
    uint32_t max_captures;
};

/* The copy of the api/ JSON files compiled in by api/embed.cmake (generated apimodel_embedded.c).
 */
struct apimodel__blob {
    const char *name;
    const unsigned char *data;
    size_t len;
};
extern const struct apimodel__blob apimodel__embedded[];
extern const size_t apimodel__embedded_n;

/* ---------------------------------------------------------------- loading */

static char *apimodel_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p)
        memcpy(p, s, n);
    return p;
}

static void apimodel_service_cleanup(struct apimodel__service *s)
{
    free(s->name);
    for (size_t i = 0; s->shapes && i < s->nshapes; i++) {
        struct apimodel__shape *sh = &s->shapes[i];
        free(sh->name);
        for (size_t j = 0; j < sh->nenums; j++)
            free(sh->enums[j]);
        free(sh->enums);
        free(sh->pattern);
        pcre2_code_free(sh->re);
        for (size_t j = 0; j < sh->nmembers; j++) {
            free(sh->members[j].name);
            free(sh->members[j].path);
        }
        free(sh->members);
    }
    free(s->shapes);
    for (size_t i = 0; s->ops && i < s->nops; i++)
        free(s->ops[i].name);
    free(s->ops);
    memset(s, 0, sizeof(*s));
}

void apimodel_free(struct apimodel *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->nsvcs; i++)
        apimodel_service_cleanup(&m->svcs[i]);
    free(m->svcs);
    pcre2_match_context_free(m->mctx);
    free(m);
}

static enum apimodel__type apimodel_type_of(const char *t)
{
    static const struct {
        const char *name;
        enum apimodel__type type;
    } types[] = {
        {"structure", MT_STRUCTURE}, {"string", MT_STRING},
        {"integer", MT_INTEGER},     {"long", MT_LONG},
        {"float", MT_FLOAT},         {"double", MT_DOUBLE},
        {"boolean", MT_BOOLEAN},     {"timestamp", MT_TIMESTAMP},
        {"list", MT_LIST},           {"map", MT_MAP},
        {"blob", MT_BLOB},
    };
    for (size_t i = 0; t && i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcmp(types[i].name, t) == 0)
            return types[i].type;
    }
    return MT_OTHER;
}

/* The shape named by ref ({"shape": "Name"}) through index (name → position), or NULL. */
static struct apimodel__shape *apimodel_resolve(struct apimodel__service *s, json_t *index,
                                                json_t *ref)
{
    json_t *pos = json_object_get(index, json_string_value(json_object_get(ref, "shape")));
    if (!json_is_integer(pos))
        return NULL;
    return &s->shapes[json_integer_value(pos)];
}

/* 1 and *cp set when p starts with \uXXXX. */
static int apimodel_java_u(const char *p, unsigned *cp)
{
    unsigned v = 0;
    if (p[0] != '\\' || p[1] != 'u')
        return 0;
    for (int k = 2; k < 6; k++) {
        int h = ty_hex_value((unsigned char)p[k]);
        if (h < 0)
            return 0;
        v = v * 16 + (unsigned)h;
    }
    *cp = v;
    return 1;
}

/*
 * Rewrites the Java-only parts of a botocore pattern for PCRE2: Java's POSIX classes
 * \p{Alnum}, \P{Digit}, ... become [:alnum:] inside a character class and [[:alnum:]] outside
 * (ASCII-only in both engines), and \uXXXX becomes \x{XXXX}. Everything else is passed through.
 * Returns 0, or -1 when out (max bytes) is too small. out is NUL-terminated.
 */
static int apimodel_java_to_pcre2(const char *in, char *out, size_t max)
{
    static const char *const posix[][2] = {
        {"Lower", "lower"}, {"Upper", "upper"}, {"ASCII", "ascii"}, {"Alpha", "alpha"},
        {"Digit", "digit"}, {"Alnum", "alnum"}, {"Punct", "punct"}, {"Graph", "graph"},
        {"Print", "print"}, {"Blank", "blank"}, {"Cntrl", "cntrl"}, {"XDigit", "xdigit"},
        {"Space", "space"},
    };
    size_t o = 0;
    int in_class = 0;
    for (size_t i = 0; in[i]; i++) {
        char tmp[32];
        size_t skip = 0;
        unsigned cp;
        tmp[0] = '\0';
        if (in[i] == '\\' && (in[i + 1] == 'p' || in[i + 1] == 'P') && in[i + 2] == '{') {
            for (size_t k = 0; k < sizeof(posix) / sizeof(posix[0]); k++) {
                size_t n = strlen(posix[k][0]);
                if (strncmp(in + i + 3, posix[k][0], n) == 0 && in[i + 3 + n] == '}') {
                    const char *neg = in[i + 1] == 'P' ? "^" : "";
                    if (in_class)
                        snprintf(tmp, sizeof(tmp), "[:%s%s:]", neg, posix[k][1]);
                    else
                        snprintf(tmp, sizeof(tmp), "[%s[:%s:]]", neg, posix[k][1]);
                    skip = 3 + n;
                    break;
                }
            }
        }
        if (skip) {
            size_t n = strlen(tmp);
            if (o + n >= max)
                return -1;
            memcpy(out + o, tmp, n);
            o += n;
            i += skip;
            continue;
        }
        if (o + 3 >= max)
            return -1;
        if (apimodel_java_u(in + i, &cp)) { /* Java's \uXXXX is PCRE2's \x{...} */
            unsigned lo;
            i += 5;
            if (cp >= 0xD800 && cp <= 0xDBFF && apimodel_java_u(in + i + 1, &lo) && lo >= 0xDC00 &&
                lo <= 0xDFFF) { /* a UTF-16 surrogate pair is one code point */
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else if (cp >= 0xD800 && cp <= 0xDFFF) {
                cp = 0xFFFD; /* a lone surrogate never occurs in valid UTF-8 */
            }
            snprintf(tmp, sizeof(tmp), "\\x{%X}", cp);
            if (o + strlen(tmp) >= max)
                return -1;
            memcpy(out + o, tmp, strlen(tmp));
            o += strlen(tmp);
            continue;
        }
        if (in[i] == '\\' && in[i + 1]) {
            out[o++] = in[i++];
            out[o++] = in[i];
            continue;
        }
        if (in[i] == '[' && !in_class) {
            in_class = 1;
            out[o++] = in[i];
            if (in[i + 1] == '^')
                out[o++] = in[++i];
            if (in[i + 1] == ']') /* a leading ] is a literal */
                out[o++] = in[++i];
            continue;
        }
        if (in[i] == ']' && in_class)
            in_class = 0;
        out[o++] = in[i];
    }
    out[o] = '\0';
    return 0;
}

static int apimodel_load_shape(struct apimodel *m, struct apimodel__service *s, json_t *index,
                               struct apimodel__shape *sh, json_t *js, const char *svc,
                               struct ty_err *err)
{
    json_t *v;
    const char *key;
    size_t i;

    sh->type = apimodel_type_of(json_string_value(json_object_get(js, "type")));
    if ((v = json_object_get(js, "min")) && json_is_number(v)) {
        sh->has_min = 1;
        sh->min = json_number_value(v);
    }
    if ((v = json_object_get(js, "max")) && json_is_number(v)) {
        sh->has_max = 1;
        sh->max = json_number_value(v);
    }
    v = json_object_get(js, "enum");
    if (json_is_array(v) && json_array_size(v) > 0) {
        sh->enums = calloc(json_array_size(v), sizeof(char *));
        if (!sh->enums)
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        for (i = 0; i < json_array_size(v); i++) {
            const char *e = json_string_value(json_array_get(v, i));
            if (!e)
                continue;
            if (!(sh->enums[sh->nenums] = apimodel_strdup(e)))
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            sh->nenums++;
        }
    }
    v = json_object_get(js, "pattern");
    if (json_is_string(v) && sh->type == MT_STRING) {
        int ec;
        PCRE2_SIZE off;
        uint32_t ncap = 0;
        size_t cap;
        char *src;
        if (!(sh->pattern = apimodel_strdup(json_string_value(v))))
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        cap = strlen(sh->pattern) * 4 + 16;
        if (!(src = malloc(cap)))
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        if (apimodel_java_to_pcre2(sh->pattern, src, cap) != 0) {
            free(src);
            return ty_err_set(err, TY_EINTERNAL, sh->name, "%s: pattern of shape %s is too long",
                              svc, sh->name);
        }
        sh->re = pcre2_compile((PCRE2_SPTR)src, PCRE2_ZERO_TERMINATED, PCRE2_UTF, &ec, &off, NULL);
        free(src);
        if (!sh->re) {
            PCRE2_UCHAR buf[128];
            pcre2_get_error_message(ec, buf, sizeof(buf));
            return ty_err_set(err, TY_EINTERNAL, sh->name,
                              "%s: pattern of shape %s does not compile at %zu: %s", svc, sh->name,
                              (size_t)off, (const char *)buf);
        }
        (void)pcre2_jit_compile(sh->re, PCRE2_JIT_COMPLETE); /* falls back to the interpreter */
        if (pcre2_pattern_info(sh->re, PCRE2_INFO_CAPTURECOUNT, &ncap) == 0 &&
            ncap > m->max_captures)
            m->max_captures = ncap;
    }
    if (sh->type == MT_STRUCTURE) {
        json_t *members = json_object_get(js, "members"), *req = json_object_get(js, "required");
        json_t *ref;
        sh->members = calloc(json_object_size(members) + 1, sizeof(*sh->members));
        if (!sh->members)
            return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        json_object_foreach(members, key, ref)
        {
            struct apimodel__member *mb = &sh->members[sh->nmembers];
            if (!(mb->shape = apimodel_resolve(s, index, ref)))
                return ty_err_set(err, TY_EINTERNAL, sh->name,
                                  "%s: member %s.%s refers to an unknown shape", svc, sh->name,
                                  key);
            if (!(mb->name = apimodel_strdup(key)) || !(mb->path = apimodel_strdup(key)))
                return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            if (mb->path[0] >= 'A' && mb->path[0] <= 'Z')
                mb->path[0] = (char)(mb->path[0] - 'A' + 'a');
            sh->nmembers++;
            for (i = 0; i < json_array_size(req); i++) {
                const char *r = json_string_value(json_array_get(req, i));
                if (r && strcmp(r, key) == 0)
                    mb->required = 1;
            }
        }
    }
    if (sh->type == MT_LIST &&
        !(sh->member = apimodel_resolve(s, index, json_object_get(js, "member"))))
        return ty_err_set(err, TY_EINTERNAL, sh->name, "%s: list %s has no member shape", svc,
                          sh->name);
    if (sh->type == MT_MAP &&
        (!(sh->key = apimodel_resolve(s, index, json_object_get(js, "key"))) ||
         !(sh->value = apimodel_resolve(s, index, json_object_get(js, "value")))))
        return ty_err_set(err, TY_EINTERNAL, sh->name, "%s: map %s lacks its key or value shape",
                          svc, sh->name);
    return 0;
}

/* Adds the service described by doc (borrowed) to m. source names it in messages. */
static int apimodel_add_service(struct apimodel *m, json_t *doc, const char *source,
                                struct ty_err *err)
{
    struct apimodel__service s, *grown;
    json_t *shapes, *ops, *index = NULL, *js;
    const char *name, *key;
    size_t i;
    int rc;

    memset(&s, 0, sizeof(s));
    name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "signingName"));
    shapes = json_object_get(doc, "shapes");
    ops = json_object_get(doc, "operations");
    if (!name || !json_is_object(shapes) || !json_is_object(ops))
        return ty_err_set(err, TY_EINTERNAL, NULL,
                          "%s: not a service model (metadata.signingName, shapes, operations)",
                          source);
    for (i = 0; i < m->nsvcs; i++) {
        if (strcmp(m->svcs[i].name, name) == 0)
            return ty_err_set(err, TY_EINTERNAL, NULL, "%s: service %s loaded twice", source, name);
    }
    rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    if (!(s.name = apimodel_strdup(name)) || !(index = json_object()))
        goto fail;
    s.shapes = calloc(json_object_size(shapes) + 1, sizeof(*s.shapes));
    s.ops = calloc(json_object_size(ops) + 1, sizeof(*s.ops));
    if (!s.shapes || !s.ops)
        goto fail;
    json_object_foreach(shapes, key, js)
    {
        if (!(s.shapes[s.nshapes].name = apimodel_strdup(key)) ||
            json_object_set_new(index, key, json_integer((json_int_t)s.nshapes)))
            goto fail;
        s.nshapes++;
    }
    i = 0;
    json_object_foreach(shapes, key, js)
    {
        if ((rc = apimodel_load_shape(m, &s, index, &s.shapes[i++], js, source, err)))
            goto fail;
    }
    json_object_foreach(ops, key, js)
    {
        struct apimodel__op *op = &s.ops[s.nops];
        json_t *in = json_object_get(js, "input");
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        if (!(op->name = apimodel_strdup(key)))
            goto fail;
        s.nops++;
        if (in && !(op->input = apimodel_resolve(&s, index, in))) {
            rc = ty_err_set(err, TY_EINTERNAL, key, "%s: operation %s has an unknown input shape",
                            source, key);
            goto fail;
        }
    }
    rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    grown = realloc(m->svcs, (m->nsvcs + 1) * sizeof(*m->svcs));
    if (!grown)
        goto fail;
    m->svcs = grown;
    m->svcs[m->nsvcs++] = s;
    json_decref(index);
    ty_err_clear(err);
    return 0;
fail:
    json_decref(index);
    apimodel_service_cleanup(&s);
    return rc;
}

static struct apimodel *apimodel_new(struct ty_err *err)
{
    struct apimodel *m = calloc(1, sizeof(*m));
    if (!m || !(m->mctx = pcre2_match_context_create(NULL))) {
        free(m);
        ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        return NULL;
    }
    pcre2_set_match_limit(m->mctx, MODEL_MATCH_LIMIT);
    return m;
}

static int apimodel_add_buffer(struct apimodel *m, const char *data, size_t len, const char *source,
                               struct ty_err *err)
{
    json_error_t jerr;
    json_t *doc = json_loadb(data, len, 0, &jerr);
    int rc;
    if (!doc)
        return ty_err_set(err, TY_EINTERNAL, NULL, "%s:%d: %s", source, jerr.line, jerr.text);
    rc = apimodel_add_service(m, doc, source, err);
    json_decref(doc);
    return rc;
}

static int apimodel_cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

struct apimodel *apimodel_load(const char *dir, struct ty_err *err)
{
    struct apimodel *m = NULL;
    DIR *d = NULL;
    struct dirent *de;
    char **names = NULL, path[4096];
    size_t n = 0, cap = 0, i;
    int rc = 0;

    if (!dir)
        return ty_err_set(err, TY_EINTERNAL, NULL, "no model directory"), NULL;
    if (!(d = opendir(dir))) {
        int saved = errno;
        ty_err_set(err, TY_EIO, NULL, "cannot open '%s': %s", dir, strerror(saved));
        return NULL;
    }
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") != 0 || de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **grown = realloc(names, (cap = cap ? cap * 2 : 8) * sizeof(*names));
            if (!grown)
                goto nomem;
            names = grown;
        }
        if (!(names[n] = apimodel_strdup(de->d_name)))
            goto nomem;
        n++;
    }
    closedir(d);
    d = NULL;
    if (n == 0) {
        ty_err_set(err, TY_EIO, NULL, "no service model (*.json) in '%s'", dir);
        goto out;
    }
    qsort(names, n, sizeof(*names), apimodel_cmp_names);
    if (!(m = apimodel_new(err)))
        goto out;
    for (i = 0; i < n && rc == 0; i++) {
        FILE *f;
        struct ty_buf b;
        char chunk[8192];
        size_t got;
        if (snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= (int)sizeof(path)) {
            rc = ty_err_set(err, TY_EIO, NULL, "path too long in '%s'", dir);
            break;
        }
        if (!(f = fopen(path, "rb"))) {
            int saved = errno;
            rc = ty_err_set(err, TY_EIO, NULL, "cannot open '%s': %s", path, strerror(saved));
            break;
        }
        ty_buf_init(&b, 64u * 1024 * 1024);
        while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0 && rc == 0)
            rc = ty_buf_append(&b, chunk, got);
        if (rc == 0 && ferror(f))
            rc = -TY_EIO;
        fclose(f);
        if (rc)
            ty_err_set(err, -rc, NULL, "cannot read '%s'", path);
        else
            rc = apimodel_add_buffer(m, b.data ? b.data : "", b.len, path, err);
        ty_buf_cleanup(&b);
    }
    if (rc) {
        apimodel_free(m);
        m = NULL;
    }
    goto out;
nomem:
    ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
out:
    if (d)
        closedir(d);
    for (i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return m;
}

struct apimodel *apimodel_load_embedded(struct ty_err *err)
{
    struct apimodel *m = apimodel_new(err);
    if (!m)
        return NULL;
    for (size_t i = 0; i < apimodel__embedded_n; i++) {
        if (apimodel_add_buffer(m, (const char *)apimodel__embedded[i].data,
                                apimodel__embedded[i].len, apimodel__embedded[i].name, err)) {
            apimodel_free(m);
            return NULL;
        }
    }
    return m;
}

static const struct apimodel__op *apimodel_find_op(const struct apimodel *m, const char *service,
                                                   const char *op)
{
    if (!m || !service || !op)
        return NULL;
    for (size_t i = 0; i < m->nsvcs; i++) {
        if (strcmp(m->svcs[i].name, service) != 0)
            continue;
        for (size_t j = 0; j < m->svcs[i].nops; j++) {
            if (strcmp(m->svcs[i].ops[j].name, op) == 0)
                return &m->svcs[i].ops[j];
        }
    }
    return NULL;
}

int apimodel_has_op(const struct apimodel *m, const char *service, const char *op)
{
    return apimodel_find_op(m, service, op) != NULL;
}

/* ---------------------------------------------------------------- validation */

struct apimodel__vctx {
    const struct apimodel *m;
    pcre2_match_data *md;
    struct ty_buf msg;         /* "Value ... constraint: ...; Value ..." */
    int nerr;                  /* every error found, listed or not */
    int nomem;                 /* an allocation failed: the answer is InternalFailure */
    char first[64];            /* path of the first error */
    char path[MODEL_MAX_PATH]; /* member path of the value being checked */
    size_t plen;
};

/* Length of the longest prefix of s[0..n) that fits in max bytes and ends on a UTF-8 boundary. */
static size_t apimodel_utf8_cut(const char *s, size_t n, size_t max)
{
    if (n <= max)
        return n;
    while (max > 0 && ((unsigned char)s[max] & 0xC0) == 0x80)
        max--;
    return max;
}

/* Appends a path segment (with a '.' unless the path is empty), cut to fit on a UTF-8 boundary
   (the path goes into messages, which must stay valid UTF-8); returns the old length. */
static size_t apimodel_push(struct apimodel__vctx *c, const char *seg)
{
    size_t old = c->plen, room = sizeof(c->path) - 1 - old, k;
    if (old && room > 0) {
        c->path[c->plen++] = '.';
        room--;
    }
    k = apimodel_utf8_cut(seg, strlen(seg), room);
    memcpy(c->path + c->plen, seg, k);
    c->plen += k;
    c->path[c->plen] = '\0';
    return old;
}

static void apimodel_pop(struct apimodel__vctx *c, size_t old)
{
    c->plen = old;
    c->path[old] = '\0';
}

/* Appends as much of s[0..n) as fits in b (cut on a UTF-8 boundary); 1 when it was cut. */
static int apimodel_put_bounded(struct ty_buf *b, const char *s, size_t n)
{
    size_t room = b->max > b->len ? b->max - b->len : 0, k = apimodel_utf8_cut(s, n, room);
    ty_buf_append(b, s, k);
    return k < n;
}

/* Java's Double.toString for the values models use: 1 → "1.0", 0.5 → "0.5". */
static void apimodel_put_double(struct ty_buf *b, double d)
{
    char tmp[64];
    if (!isfinite(d)) {
        ty_buf_puts(b, isnan(d) ? "NaN" : d > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (d == floor(d) && fabs(d) < 1e7) {
        ty_buf_printf(b, "%.1f", d);
        return;
    }
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*g", prec, d);
        if (strtod(tmp, NULL) == d)
            break;
    }
    ty_buf_puts(b, tmp);
}

/* Appends the Java-style rendering AWS prints: strings raw, [a, b] lists, {k=v} maps. */
static void apimodel_render(struct ty_buf *b, const json_t *v, int depth)
{
    const char *k;
    json_t *x;
    size_t i;
    int first = 1;

    if (depth > MODEL_MAX_DEPTH) {
        ty_buf_puts(b, "...");
        return;
    }
    switch (json_typeof(v)) {
    case JSON_STRING: {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), start = 0;
        for (i = 0; i <= n; i++) { /* a NUL inside the value would end the message */
            if (i == n || s[i] == '\0') {
                apimodel_put_bounded(b, s + start, i - start);
                if (i < n)
                    ty_buf_puts(b, "\\u0000");
                start = i + 1;
            }
        }
        break;
    }
    case JSON_INTEGER:
        ty_buf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        break;
    case JSON_REAL:
        apimodel_put_double(b, json_real_value(v));
        break;
    case JSON_TRUE:
        ty_buf_puts(b, "true");
        break;
    case JSON_FALSE:
        ty_buf_puts(b, "false");
        break;
    case JSON_NULL:
        ty_buf_puts(b, "null");
        break;
    case JSON_ARRAY:
        ty_buf_puts(b, "[");
        json_array_foreach(v, i, x)
        {
            if (b->len >= b->max)
                break;
            ty_buf_puts(b, i ? ", " : "");
            apimodel_render(b, x, depth + 1);
        }
        ty_buf_puts(b, "]");
        break;
    case JSON_OBJECT:
        ty_buf_puts(b, "{");
        json_object_foreach((json_t *)v, k, x)
        {
            if (b->len >= b->max)
                break;
            ty_buf_puts(b, first ? "" : ", ");
            apimodel_put_bounded(b, k, strlen(k));
            ty_buf_puts(b, "=");
            apimodel_render(b, x, depth + 1);
            first = 0;
        }
        ty_buf_puts(b, "}");
        break;
    }
}

/*
 * Records one error at the current path: "Value 'v' at 'path' failed to satisfy constraint: "
 * followed by what (a constraint text). v NULL prints "Value null".
 */
static void apimodel_error(struct apimodel__vctx *c, const json_t *v, const char *what)
{
    struct ty_buf val;
    int rc = 0;

    if (c->nerr++ == 0) {
        size_t n = apimodel_utf8_cut(c->path, c->plen, sizeof(c->first) - 1);
        memcpy(c->first, c->path, n);
        c->first[n] = '\0';
    }
    if (c->nerr > MODEL_MAX_ERRORS)
        return;
    ty_buf_init(&val, MODEL_MAX_VALUE);
    if (v && !json_is_null(v)) {
        ty_buf_puts(&val, "'");
        apimodel_render(&val, v, 0);
        if (ty_buf_puts(&val, "'") == -TY_ETOOBIG) {
            val.len = apimodel_utf8_cut(val.data, val.len, val.len - 4);
            ty_buf_puts(&val, "...'");
        }
    } else {
        rc = ty_buf_puts(&val, "null");
    }
    if (rc == -TY_ENOMEM || !val.data) {
        c->nomem = 1;
    } else {
        rc = ty_buf_printf(&c->msg, "%sValue %s at '%s' failed to satisfy constraint: %s",
                           c->msg.len ? "; " : "", val.data, c->path, what);
        if (rc == -TY_ENOMEM)
            c->nomem = 1;
    }
    ty_buf_cleanup(&val);
}

static int apimodel_is_int_type(enum apimodel__type t)
{
    return t == MT_INTEGER || t == MT_LONG;
}

static void apimodel_put_bound(struct ty_buf *b, const struct apimodel__shape *sh, double x)
{
    if (sh->type == MT_FLOAT || sh->type == MT_DOUBLE)
        apimodel_put_double(b, x);
    else
        ty_buf_printf(b, "%.0f", x);
}

/* Kinds of constraint text (AWS's wording). */
enum apimodel__cons { MC_LEN_MAX, MC_LEN_MIN, MC_VAL_MAX, MC_VAL_MIN, MC_PATTERN, MC_ENUM };

static void apimodel_cons_text(struct ty_buf *b, const struct apimodel__shape *sh,
                               enum apimodel__cons k)
{
    switch (k) {
    case MC_LEN_MAX:
        ty_buf_puts(b, "Member must have length less than or equal to ");
        apimodel_put_bound(b, sh, sh->max);
        break;
    case MC_LEN_MIN:
        ty_buf_puts(b, "Member must have length greater than or equal to ");
        apimodel_put_bound(b, sh, sh->min);
        break;
    case MC_VAL_MAX:
        ty_buf_puts(b, "Member must have value less than or equal to ");
        apimodel_put_bound(b, sh, sh->max);
        break;
    case MC_VAL_MIN:
        ty_buf_puts(b, "Member must have value greater than or equal to ");
        apimodel_put_bound(b, sh, sh->min);
        break;
    case MC_PATTERN:
        ty_buf_printf(b, "Member must satisfy regular expression pattern: %s", sh->pattern);
        break;
    case MC_ENUM:
        ty_buf_puts(b, "Member must satisfy enum value set: [");
        for (size_t i = 0; i < sh->nenums; i++)
            ty_buf_printf(b, "%s%s", i ? ", " : "", sh->enums[i]);
        ty_buf_puts(b, "]");
        break;
    }
}

static void apimodel_error_cons(struct apimodel__vctx *c, const json_t *v,
                                const struct apimodel__shape *sh, enum apimodel__cons k)
{
    struct ty_buf t;
    ty_buf_init(&t, MODEL_MAX_MSG);
    apimodel_cons_text(&t, sh, k);
    if (!t.data)
        c->nomem = 1;
    else
        apimodel_error(c, v, t.data);
    ty_buf_cleanup(&t);
}

/*
 * "prefix[every constraint of sh]", the form AWS uses for list elements ("Member must satisfy
 * constraint: [...]") and map keys and values ("Map value must satisfy constraint: [...]").
 */
static void apimodel_error_all(struct apimodel__vctx *c, const json_t *v, const char *prefix,
                               const struct apimodel__shape *sh)
{
    struct ty_buf t;
    int n = 0;
    ty_buf_init(&t, MODEL_MAX_MSG);
    ty_buf_printf(&t, "%s[", prefix);
#define MODEL__ADD(cond, kind)                                                                     \
    do {                                                                                           \
        if (cond) {                                                                                \
            ty_buf_puts(&t, n++ ? ", " : "");                                                      \
            apimodel_cons_text(&t, sh, kind);                                                      \
        }                                                                                          \
    } while (0)
    if (sh->type == MT_STRING || sh->type == MT_BLOB || sh->type == MT_LIST || sh->type == MT_MAP) {
        MODEL__ADD(sh->has_max, MC_LEN_MAX);
        /* a length minimum of 0 cannot fail: current models spell it out, AWS does not list it */
        MODEL__ADD(sh->has_min && sh->min > 0, MC_LEN_MIN);
    } else {
        MODEL__ADD(sh->has_max, MC_VAL_MAX);
        MODEL__ADD(sh->has_min, MC_VAL_MIN);
    }
    MODEL__ADD(sh->pattern, MC_PATTERN);
    MODEL__ADD(sh->nenums, MC_ENUM);
#undef MODEL__ADD
    ty_buf_puts(&t, "]");
    if (!t.data)
        c->nomem = 1;
    else
        apimodel_error(c, v, t.data);
    ty_buf_cleanup(&t);
}

static int apimodel_is_scalar(const struct apimodel__shape *sh)
{
    return sh->type != MT_STRUCTURE && sh->type != MT_LIST && sh->type != MT_MAP;
}

/* Number of UTF-8 code points in s[0..n). */
static size_t apimodel_utf8_len(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            count++;
    }
    return count;
}

static int apimodel_digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        if ((*p)[i] < '0' || (*p)[i] > '9')
            return -1;
        v = v * 10 + ((*p)[i] - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* 1 when s is an ISO-8601 date-time: YYYY-MM-DD[THH:MM[:SS[.f+]]][Z|±HH[:]MM]. */
static int apimodel_is_iso8601(const char *s)
{
    int y, mo, d, h = 0, mi = 0, sec = 0, tzh, tzm;
    if (apimodel_digits(&s, 4, &y) || *s++ != '-' || apimodel_digits(&s, 2, &mo) || *s++ != '-' ||
        apimodel_digits(&s, 2, &d))
        return 0;
    if (mo < 1 || mo > 12 || d < 1 || d > 31)
        return 0;
    if (*s == '\0')
        return 1;
    if (*s != 'T' && *s != 't' && *s != ' ')
        return 0;
    s++;
    if (apimodel_digits(&s, 2, &h) || *s++ != ':' || apimodel_digits(&s, 2, &mi))
        return 0;
    if (*s == ':') {
        s++;
        if (apimodel_digits(&s, 2, &sec))
            return 0;
        if (*s == '.' || *s == ',') {
            s++;
            if (*s < '0' || *s > '9')
                return 0;
            while (*s >= '0' && *s <= '9')
                s++;
        }
    }
    if (h > 24 || mi > 59 || sec > 60)
        return 0;
    if (*s == 'Z' || *s == 'z')
        return s[1] == '\0';
    if (*s == '\0')
        return 1;
    if (*s != '+' && *s != '-')
        return 0;
    s++;
    if (apimodel_digits(&s, 2, &tzh))
        return 0;
    if (*s == ':')
        s++;
    if (apimodel_digits(&s, 2, &tzm))
        return 0;
    return *s == '\0' && tzh <= 23 && tzm <= 59;
}

static const char *apimodel_type_need(enum apimodel__type t)
{
    switch (t) {
    case MT_STRUCTURE:
        return "Member must be a structure (JSON object)";
    case MT_STRING:
        return "Member must be a string";
    case MT_INTEGER:
        return "Member must be an integer between -2147483648 and 2147483647";
    case MT_LONG:
        return "Member must be an integer";
    case MT_FLOAT:
    case MT_DOUBLE:
        return "Member must be a number";
    case MT_BOOLEAN:
        return "Member must be a boolean";
    case MT_TIMESTAMP:
        return "Member must be a timestamp (epoch seconds or ISO-8601)";
    case MT_LIST:
        return "Member must be a list (JSON array)";
    case MT_MAP:
        return "Member must be a map (JSON object)";
    case MT_BLOB:
        return "Member must be a base64-encoded string";
    case MT_OTHER:
        break;
    }
    return "Member has the wrong type";
}

/* 1 when v has sh's JSON type. */
static int apimodel_type_ok(const struct apimodel__shape *sh, const json_t *v)
{
    switch (sh->type) {
    case MT_STRUCTURE:
    case MT_MAP:
        return json_is_object(v);
    case MT_STRING:
    case MT_BLOB:
        return json_is_string(v);
    case MT_INTEGER:
        return json_is_integer(v) && json_integer_value(v) >= INT32_MIN &&
               json_integer_value(v) <= INT32_MAX;
    case MT_LONG:
        return json_is_integer(v);
    case MT_FLOAT:
    case MT_DOUBLE:
        return json_is_number(v);
    case MT_BOOLEAN:
        return json_is_boolean(v);
    case MT_TIMESTAMP:
        return json_is_number(v) ||
               (json_is_string(v) && apimodel_is_iso8601(json_string_value(v)));
    case MT_LIST:
        return json_is_array(v);
    case MT_OTHER:
        break;
    }
    return 1;
}

/* Bitmask of the scalar constraints v (of the right type) breaks, 1 << enum apimodel__cons. */
static unsigned apimodel_scalar_fails(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                                      const json_t *v)
{
    unsigned bad = 0;
    if (sh->type == MT_STRING) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v), len = apimodel_utf8_len(s, n);
        if (sh->has_max && (double)len > sh->max)
            bad |= 1u << MC_LEN_MAX;
        if (sh->has_min && (double)len < sh->min)
            bad |= 1u << MC_LEN_MIN;
        if (sh->re) {
            int rc = pcre2_match(sh->re, (PCRE2_SPTR)s, n, 0, PCRE2_ANCHORED | PCRE2_ENDANCHORED,
                                 c->md, c->m->mctx);
            if (rc < 0)
                bad |= 1u << MC_PATTERN; /* no match, or over the match limit */
        }
        if (sh->nenums) {
            size_t i;
            for (i = 0; i < sh->nenums; i++) {
                if (strlen(sh->enums[i]) == n && memcmp(sh->enums[i], s, n) == 0)
                    break;
            }
            if (i == sh->nenums)
                bad |= 1u << MC_ENUM;
        }
    } else if (apimodel_is_int_type(sh->type)) {
        json_int_t x = json_integer_value(v);
        if (sh->has_max && (double)x > sh->max)
            bad |= 1u << MC_VAL_MAX;
        if (sh->has_min && (double)x < sh->min)
            bad |= 1u << MC_VAL_MIN;
    } else if (sh->type == MT_FLOAT || sh->type == MT_DOUBLE) {
        double x = json_number_value(v);
        if (sh->has_max && x > sh->max)
            bad |= 1u << MC_VAL_MAX;
        if (sh->has_min && x < sh->min)
            bad |= 1u << MC_VAL_MIN;
    }
    return bad;
}

static void apimodel_check(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                           const json_t *v, int depth);

static void apimodel_check_struct(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                                  const json_t *v, int depth)
{
    for (size_t i = 0; i < sh->nmembers; i++) {
        const struct apimodel__member *mb = &sh->members[i];
        json_t *x = json_object_get(v, mb->name);
        size_t old = apimodel_push(c, mb->path);
        if (!x || json_is_null(x)) {
            if (mb->required)
                apimodel_error(c, NULL, "Member must not be null");
        } else {
            apimodel_check(c, mb->shape, x, depth + 1);
        }
        apimodel_pop(c, old);
    }
}

static void apimodel_check_count(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                                 const json_t *v, size_t count)
{
    if (sh->has_max && (double)count > sh->max)
        apimodel_error_cons(c, v, sh, MC_LEN_MAX);
    if (sh->has_min && (double)count < sh->min)
        apimodel_error_cons(c, v, sh, MC_LEN_MIN);
}

static void apimodel_check_list(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                                const json_t *v, int depth)
{
    const struct apimodel__shape *el = sh->member;
    json_t *x;
    size_t i;
    int elements_bad = 0;
    char seg[32];

    apimodel_check_count(c, sh, v, json_array_size(v));
    json_array_foreach(v, i, x)
    {
        if (apimodel_is_scalar(el) && !json_is_null(x) && apimodel_type_ok(el, x)) {
            if (apimodel_scalar_fails(c, el, x))
                elements_bad = 1;
            continue;
        }
        snprintf(seg, sizeof(seg), "%zu.member", i + 1);
        size_t old = apimodel_push(c, seg);
        if (json_is_null(x))
            apimodel_error(c, NULL, "Member must not be null");
        else
            apimodel_check(c, el, x, depth + 1);
        apimodel_pop(c, old);
    }
    if (elements_bad)
        apimodel_error_all(c, v, "Member must satisfy constraint: ", el);
}

static void apimodel_check_map(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                               const json_t *v, int depth)
{
    const char *k;
    json_t *x, *key;
    int keys_bad = 0, values_bad = 0;

    apimodel_check_count(c, sh, v, json_object_size(v));
    json_object_foreach((json_t *)v, k, x)
    {
        if (apimodel_is_scalar(sh->key) && sh->key->type == MT_STRING) {
            if (!(key = json_stringn_nocheck(k, strlen(k)))) {
                c->nomem = 1;
                return;
            }
            if (apimodel_scalar_fails(c, sh->key, key))
                keys_bad = 1;
            json_decref(key);
        }
        if (apimodel_is_scalar(sh->value) && !json_is_null(x) && apimodel_type_ok(sh->value, x)) {
            if (apimodel_scalar_fails(c, sh->value, x))
                values_bad = 1;
            continue;
        }
        size_t old = apimodel_push(c, k);
        if (json_is_null(x))
            apimodel_error(c, NULL, "Member must not be null");
        else
            apimodel_check(c, sh->value, x, depth + 1);
        apimodel_pop(c, old);
    }
    if (keys_bad)
        apimodel_error_all(c, v, "Map keys must satisfy constraint: ", sh->key);
    if (values_bad)
        apimodel_error_all(c, v, "Map value must satisfy constraint: ", sh->value);
}

static void apimodel_check(struct apimodel__vctx *c, const struct apimodel__shape *sh,
                           const json_t *v, int depth)
{
    if (depth > MODEL_MAX_DEPTH || c->nomem)
        return;
    if (!apimodel_type_ok(sh, v)) {
        apimodel_error(c, v, apimodel_type_need(sh->type));
        return;
    }
    switch (sh->type) {
    case MT_STRUCTURE:
        apimodel_check_struct(c, sh, v, depth);
        break;
    case MT_LIST:
        apimodel_check_list(c, sh, v, depth);
        break;
    case MT_MAP:
        apimodel_check_map(c, sh, v, depth);
        break;
    default: {
        unsigned bad = apimodel_scalar_fails(c, sh, v);
        for (int k = MC_LEN_MAX; k <= MC_ENUM; k++) {
            if (bad & (1u << k))
                apimodel_error_cons(c, v, sh, (enum apimodel__cons)k);
        }
        break;
    }
    }
}

int apimodel_validate(const struct apimodel *m, const char *service, const char *op, json_t *input,
                      struct ty_err *err)
{
    const struct apimodel__op *o = apimodel_find_op(m, service, op);
    struct apimodel__vctx c;
    int rc = 0;

    if (!o)
        return ty_err_set(err, TY_EUNKNOWNOP, NULL, "Operation %s is not supported.",
                          op ? op : "(null)");
    if (!json_is_object(input))
        return ty_err_set(err, TY_ESERIAL, NULL,
                          "Start of structure or map found where not expected.");
    if (!o->input)
        return 0;
    memset(&c, 0, sizeof(c));
    c.m = m;
    ty_buf_init(&c.msg, MODEL_MAX_MSG);
    if (!(c.md = pcre2_match_data_create(m->max_captures + 1, NULL)))
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    apimodel_check(&c, o->input, input, 0);
    if (c.nomem)
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    else if (c.nerr) {
        /* err->msg is bounded: cut the joined messages on a UTF-8 boundary to fit. */
        char head[64];
        const char *body = c.msg.data ? c.msg.data : "";
        int hn = snprintf(head, sizeof(head), "%d validation error%s detected: ", c.nerr,
                          c.nerr == 1 ? "" : "s");
        size_t room = sizeof(err->msg) - 1 - (size_t)hn;
        int keep = (int)apimodel_utf8_cut(body, strlen(body), room);
        rc = ty_err_set(err, TY_EINVAL, c.first, "%s%.*s", head, keep, body);
    }
    pcre2_match_data_free(c.md);
    ty_buf_cleanup(&c.msg);
    return rc;
}
