/*
 * ty_buf.c - growable buffer with a ceiling.
 */
#include "ty_buf.h"

#include "ty_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ty_buf_init(struct ty_buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max;
}

void ty_buf_cleanup(struct ty_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
}

void ty_buf_reset(struct ty_buf *b)
{
    b->len = 0;
    if (b->data)
        b->data[0] = '\0';
}

static int ty_buf_reserve(struct ty_buf *b, size_t extra)
{
    size_t need, cap;
    char *p;

    if (extra > b->max || b->len > b->max - extra)
        return -TY_ETOOBIG;
    need = b->len + extra + 1;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap : 256;
    while (cap < need)
        cap *= 2;
    p = realloc(b->data, cap);
    if (!p)
        return -TY_ENOMEM;
    b->data = p;
    b->cap = cap;
    return 0;
}

int ty_buf_append(struct ty_buf *b, const void *p, size_t n)
{
    int rc = ty_buf_reserve(b, n);
    if (rc)
        return rc;
    if (n)
        memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int ty_buf_puts(struct ty_buf *b, const char *s)
{
    return ty_buf_append(b, s, strlen(s));
}

int ty_buf_printf(struct ty_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n, rc;

    va_start(ap, fmt);
    n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -TY_EINVAL;
    rc = ty_buf_reserve(b, (size_t)n);
    if (rc)
        return rc;
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
    return 0;
}

/* XML text (html 0): characters XML 1.0 cannot carry are dropped, '\r' kept as "&#13;".
   HTML text (html 1): "&#39;" for the apostrophe, control characters but '\t' and '\n' as
   U+FFFD (what a browser would show for them). */
static int ty_buf_escape(struct ty_buf *b, const char *s, int html)
{
    int rc = 0;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p && !rc; p++) {
        switch (*p) {
        case '&':
            rc = ty_buf_puts(b, "&amp;");
            break;
        case '<':
            rc = ty_buf_puts(b, "&lt;");
            break;
        case '>':
            rc = ty_buf_puts(b, "&gt;");
            break;
        case '"':
            rc = ty_buf_puts(b, "&quot;");
            break;
        case '\'':
            rc = ty_buf_puts(b, html ? "&#39;" : "&apos;");
            break;
        default:
            if (*p == '\t' || *p == '\n' || (*p >= 0x20 && *p != 0x7f) || (!html && *p == 0x7f))
                rc = ty_buf_append(b, p, 1);
            else if (html)
                rc = ty_buf_puts(b, "&#65533;");
            else if (*p == '\r')
                rc = ty_buf_puts(b, "&#13;");
        }
    }
    return rc;
}

int ty_buf_put_xml(struct ty_buf *b, const char *s)
{
    return ty_buf_escape(b, s, 0);
}

int ty_buf_put_html(struct ty_buf *b, const char *s)
{
    return ty_buf_escape(b, s, 1);
}

char *ty_buf_steal(struct ty_buf *b)
{
    char *p = b->data;
    if (!p)
        p = calloc(1, 1);
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    return p;
}
