/*
 * ty_err.c - tables generated from TY_ERR_MAP and the ty_err setters.
 */
#include "ty_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct ty__err_row {
    int code;
    const char *desc;
    const char *aws;
    int http;
};

static const struct ty__err_row ty_err_rows[] = {
#define TY__ERR_ROW(name, num, desc, aws, http) {num, desc, aws, http},
    TY_ERR_MAP(TY__ERR_ROW)
#undef TY__ERR_ROW
};

static const struct ty__err_row *ty_err_find(int code)
{
    if (code < 0)
        code = -code;
    for (size_t i = 0; i < sizeof(ty_err_rows) / sizeof(ty_err_rows[0]); i++) {
        if (ty_err_rows[i].code == code)
            return &ty_err_rows[i];
    }
    return NULL;
}

void ty_err_clear(struct ty_err *err)
{
    if (!err)
        return;
    err->code = TY_EOK;
    err->field[0] = '\0';
    err->msg[0] = '\0';
}

/* Cuts s (len bytes, truncated to fit its buffer) before a UTF-8 sequence the cut left
   incomplete, so that a message quoting a client's name stays valid UTF-8 (it goes into JSON). */
static void ty_err_utf8_tail(char *s, size_t len)
{
    size_t i = len, cont = 0;

    while (i > 0 && cont < 3 && ((unsigned char)s[i - 1] & 0xC0) == 0x80) {
        i--;
        cont++;
    }
    if (i > 0) {
        unsigned char lead = (unsigned char)s[i - 1];
        size_t need = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
        if (lead >= 0xC0 && cont < need)
            s[i - 1] = '\0';
    }
}

int ty_err_set(struct ty_err *err, int code, const char *field, const char *fmt, ...)
{
    if (code < 0)
        code = -code;
    if (err) { /* built aside first: field and the arguments may point into err itself */
        char f[sizeof(err->field)], m[sizeof(err->msg)];
        va_list ap;
        int n;
        n = snprintf(f, sizeof(f), "%s", field ? field : "");
        if (n >= (int)sizeof(f))
            ty_err_utf8_tail(f, sizeof(f) - 1);
        va_start(ap, fmt);
        n = vsnprintf(m, sizeof(m), fmt, ap);
        va_end(ap);
        if (n < 0)
            m[0] = '\0';
        else if (n >= (int)sizeof(m))
            ty_err_utf8_tail(m, sizeof(m) - 1);
        err->code = code;
        memcpy(err->field, f, sizeof(f));
        memcpy(err->msg, m, sizeof(m));
    }
    return -code;
}

const char *ty_strerror(int code)
{
    const struct ty__err_row *r = ty_err_find(code);
    return r ? r->desc : "unknown error";
}

const char *ty_err_aws_name(int code)
{
    const struct ty__err_row *r = ty_err_find(code);
    return r ? r->aws : "InternalFailure";
}

int ty_err_http_status(int code)
{
    const struct ty__err_row *r = ty_err_find(code);
    return r ? r->http : 500;
}
