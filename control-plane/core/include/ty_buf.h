/*
 * ty_buf.h - a growable byte buffer with a ceiling.
 *
 * Owns: its data. Every buffer has a maximum size (curl's `toobig`); growing past it returns
 * -TY_ETOOBIG and leaves the buffer as it was. The data is always NUL-terminated. Not thread-safe.
 */
#ifndef TY_CORE_TY_BUF_H
#define TY_CORE_TY_BUF_H

#include <stddef.h>

struct ty_buf {
    char *data; /* NULL until the first append; NUL-terminated after it */
    size_t len;
    size_t cap;
    size_t max; /* ceiling on len */
};

/* Initialises an empty buffer that may grow to max bytes. */
void ty_buf_init(struct ty_buf *b, size_t max);
/* Frees the data; the buffer may be reused after ty_buf_init. */
void ty_buf_cleanup(struct ty_buf *b);
/* Empties the buffer, keeping its memory. */
void ty_buf_reset(struct ty_buf *b);
/* Appends n bytes; 0, -TY_ETOOBIG or -TY_ENOMEM. */
int ty_buf_append(struct ty_buf *b, const void *p, size_t n);
/* Appends a C string; as ty_buf_append. */
int ty_buf_puts(struct ty_buf *b, const char *s);
/* Appends formatted text; as ty_buf_append. */
int ty_buf_printf(struct ty_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s (NULL = "") escaped for XML text and attributes; characters XML 1.0 cannot carry
   are dropped and '\r' is kept as "&#13;". As ty_buf_append. */
int ty_buf_put_xml(struct ty_buf *b, const char *s);
/* Appends s (NULL = "") escaped for HTML text and attributes ("&#39;" for the apostrophe);
   control characters other than tab and newline become U+FFFD. As ty_buf_append. */
int ty_buf_put_html(struct ty_buf *b, const char *s);
/* Hands the data to the caller. new: caller frees with free(); the buffer is left empty. */
char *ty_buf_steal(struct ty_buf *b);

/* Frees *pp and sets it to NULL. */
#define ty_safefree(pp)                                                                            \
    do {                                                                                           \
        free(pp);                                                                                  \
        (pp) = NULL;                                                                               \
    } while (0)

#endif
