/* util.c - libtyc's allocator shim, logging callback, error helpers and bounded buffers.
 * Owns the process-wide hooks set by tyc_set_log() and tyc_set_allocators() (set them before use;
 * not thread-safe to change). */
#include "tyc_int.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct tyc_allocators alloc_hooks = {malloc, calloc, realloc, free};
static tyc_log_fn log_fn;
static void *log_ud;
static int log_max = -1;

void tyc_set_allocators(const struct tyc_allocators *a)
{
    alloc_hooks.malloc_fn = a && a->malloc_fn ? a->malloc_fn : malloc;
    alloc_hooks.calloc_fn = a && a->calloc_fn ? a->calloc_fn : calloc;
    alloc_hooks.realloc_fn = a && a->realloc_fn ? a->realloc_fn : realloc;
    alloc_hooks.free_fn = a && a->free_fn ? a->free_fn : free;
}

void *tyc__malloc(size_t n)
{
    return alloc_hooks.malloc_fn(n ? n : 1);
}

void *tyc__calloc(size_t n, size_t m)
{
    return alloc_hooks.calloc_fn(n ? n : 1, m ? m : 1);
}

void *tyc__realloc(void *p, size_t n)
{
    return alloc_hooks.realloc_fn(p, n ? n : 1);
}

void tyc__free(void *p)
{
    if (p)
        alloc_hooks.free_fn(p);
}

void tyc_free(void *p)
{
    tyc__free(p);
}

char *tyc__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = tyc__malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

const char *tyc_strerror(int code)
{
    if (code < 0)
        code = -code;
    switch (code) {
#define TYC_X_STR(name, val, str)                                                                  \
    case val:                                                                                      \
        return str;
        TYC_ERR_MAP(TYC_X_STR)
#undef TYC_X_STR
    }
    return "unknown error";
}

void tyc_set_log(tyc_log_fn fn, void *ud, int max_level)
{
    log_fn = fn;
    log_ud = ud;
    log_max = fn ? max_level : -1;
}

void tyc__log(int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    if (!log_fn || level > log_max)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    log_fn(log_ud, level, line);
}

int tyc__err_set(struct tyc_err *err, int code, const char *field, const char *fmt, ...)
{
    va_list ap;
    if (err) {
        err->code = code;
        snprintf(err->field, sizeof(err->field), "%s", field ? field : "");
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
        va_end(ap);
    }
    return -code;
}

void tyc__buf_init(struct tyc__buf *b, size_t max)
{
    memset(b, 0, sizeof(*b));
    b->max = max;
}

void tyc__buf_printf(struct tyc__buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    if (b->oom)
        return;
    for (;;) {
        size_t avail = b->cap - b->len;
        va_start(ap, fmt);
        n = vsnprintf(b->p ? b->p + b->len : NULL, avail, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = 1;
            return;
        }
        if ((size_t)n < avail) {
            b->len += (size_t)n;
            return;
        }
        size_t ncap = b->cap ? b->cap * 2 : 4096;
        while (ncap < b->len + (size_t)n + 1)
            ncap *= 2;
        if (ncap > b->max) {
            b->oom = 1;
            return;
        }
        char *np = tyc__realloc(b->p, ncap);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = ncap;
    }
}

void tyc__buf_cleanup(struct tyc__buf *b)
{
    tyc__safefree(b->p);
    b->len = b->cap = 0;
}
