/*
 * jsonw.c - JSON text output helpers (string literals with UTF-8 repair, numbers).
 * Stateless; thread-safe as long as each FILE has one writer.
 */
#include "typrof_int.h"
#include <math.h>

static size_t utf8_seq_len(const unsigned char *s)
{
    unsigned char c = s[0];
    size_t n;
    if (c < 0x80)
        return 1;
    if ((c & 0xE0) == 0xC0 && c >= 0xC2)
        n = 2;
    else if ((c & 0xF0) == 0xE0)
        n = 3;
    else if ((c & 0xF8) == 0xF0 && c <= 0xF4)
        n = 4;
    else
        return 0;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

void typrof__json_str(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    fputc('"', f);
    while (*s) {
        unsigned char c = *s;
        if (c == '"' || c == '\\') {
            fputc('\\', f);
            fputc(c, f);
            s++;
        } else if (c == '\n') {
            fputs("\\n", f);
            s++;
        } else if (c == '\t') {
            fputs("\\t", f);
            s++;
        } else if (c == '/' && s[1] == '\0') {
            fputc(c, f);
            s++;
        } else if (c < 0x20) {
            fprintf(f, "\\u%04x", c);
            s++;
        } else if (c == '<') {
            fputs("\\u003c", f); /* keeps "</script>" out of HTML embeddings */
            s++;
        } else {
            size_t n = utf8_seq_len(s);
            if (n == 0) {
                fputs("\\ufffd", f);
                s++;
            } else {
                fwrite(s, 1, n, f);
                s += n;
            }
        }
    }
    fputc('"', f);
}

void typrof__json_num(FILE *f, double v)
{
    if (!isfinite(v))
        v = 0;
    if (v == (double)(int64_t)v && fabs(v) < 9e15)
        fprintf(f, "%lld", (long long)v);
    else
        fprintf(f, "%.9g", v);
}
