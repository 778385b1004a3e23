/*
 * ty_xml.c - the tiny S3 XML reader (ty_xml.h).
 */
#include "ty_xml.h"

#include "ty_buf.h"

#include <stdlib.h>
#include <string.h>

/* Finds <tag>...</tag> in [p, end) (tag without attributes or with them); OUT: the inner text
   range. Returns the position after the closing tag, or NULL. */
const char *ty_xml_find(const char *p, const char *end, const char *tag, const char **in,
                        const char **in_end)
{
    size_t tl = strlen(tag);
    while (p && p < end) {
        const char *lt = memchr(p, '<', (size_t)(end - p));
        const char *gt, *close;
        if (!lt || (size_t)(end - lt) < tl + 2)
            return NULL;
        if (strncmp(lt + 1, tag, tl) == 0 &&
            (lt[1 + tl] == '>' || lt[1 + tl] == ' ' || lt[1 + tl] == '/')) {
            gt = memchr(lt, '>', (size_t)(end - lt));
            if (!gt)
                return NULL;
            if (gt[-1] == '/') { /* <Tag/> */
                *in = *in_end = gt + 1;
                return gt + 1;
            }
            for (close = gt + 1; close < end; close++) {
                close = memchr(close, '<', (size_t)(end - close));
                if (!close)
                    return NULL;
                if ((size_t)(end - close) >= tl + 3 && close[1] == '/' &&
                    strncmp(close + 2, tag, tl) == 0 && close[2 + tl] == '>') {
                    *in = gt + 1;
                    *in_end = close;
                    return close + tl + 3;
                }
            }
            return NULL;
        }
        p = lt + 1;
    }
    return NULL;
}

static void ty_xml_utf8(struct ty_buf *b, unsigned long cp)
{
    unsigned char o[4];
    if (cp < 0x80) {
        o[0] = (unsigned char)cp;
        ty_buf_append(b, o, 1);
    } else if (cp < 0x800) {
        o[0] = (unsigned char)(0xc0 | (cp >> 6));
        o[1] = (unsigned char)(0x80 | (cp & 0x3f));
        ty_buf_append(b, o, 2);
    } else if (cp < 0x10000) {
        o[0] = (unsigned char)(0xe0 | (cp >> 12));
        o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (unsigned char)(0x80 | (cp & 0x3f));
        ty_buf_append(b, o, 3);
    } else if (cp < 0x110000) {
        o[0] = (unsigned char)(0xf0 | (cp >> 18));
        o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
        o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        o[3] = (unsigned char)(0x80 | (cp & 0x3f));
        ty_buf_append(b, o, 4);
    }
}

/* new: the unescaped text of [p, end), or NULL when it holds a bad entity or a NUL. */
char *ty_xml_text(const char *p, const char *end)
{
    struct ty_buf b;
    ty_buf_init(&b, 64 * 1024);
    ty_buf_append(&b, "", 0);
    while (p < end) {
        if (*p == '&') {
            const char *semi = memchr(p, ';', (size_t)(end - p));
            size_t n;
            if (!semi)
                goto bad;
            n = (size_t)(semi - p - 1);
            if (n == 2 && strncmp(p + 1, "lt", 2) == 0)
                ty_buf_puts(&b, "<");
            else if (n == 2 && strncmp(p + 1, "gt", 2) == 0)
                ty_buf_puts(&b, ">");
            else if (n == 3 && strncmp(p + 1, "amp", 3) == 0)
                ty_buf_puts(&b, "&");
            else if (n == 4 && strncmp(p + 1, "quot", 4) == 0)
                ty_buf_puts(&b, "\"");
            else if (n == 4 && strncmp(p + 1, "apos", 4) == 0)
                ty_buf_puts(&b, "'");
            else if (n >= 2 && p[1] == '#') {
                char num[16];
                unsigned long cp;
                char *e;
                int hex = p[2] == 'x' || p[2] == 'X';
                size_t dl = n - 1 - (size_t)hex;
                if (dl == 0 || dl >= sizeof(num))
                    goto bad;
                memcpy(num, p + 2 + hex, dl);
                num[dl] = '\0';
                cp = strtoul(num, &e, hex ? 16 : 10);
                if (*e || cp == 0 || cp > 0x10ffff)
                    goto bad;
                ty_xml_utf8(&b, cp);
            } else {
                goto bad;
            }
            p = semi + 1;
        } else {
            if (*p == '\0')
                goto bad;
            if (ty_buf_append(&b, p, 1) != 0)
                goto bad;
            p++;
        }
    }
    return ty_buf_steal(&b);
bad:
    ty_buf_cleanup(&b);
    return NULL;
}
