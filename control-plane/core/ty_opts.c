/*
 * ty_opts.c - flags, variables and defaults of trainyard's programs (ty_opts.h).
 */
#include "ty_opts.h"

#include <stdlib.h>
#include <string.h>

void ty_opts_usage(FILE *f, const struct ty_opts_prog *p, const struct ty_opt *opts, size_t n)
{
    fprintf(f, "usage: %s [options]\n\n", p->name);
    if (p->about)
        fprintf(f, "%s\n\n", p->about);
    fprintf(f, "Each option may also be set through its environment variable; flags win over\n"
               "variables, variables over defaults.\n\n");
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "  --%s VALUE\n      %s\n      (%s", opts[i].flag, opts[i].help, opts[i].env);
        if (opts[i].def)
            fprintf(f, "; default: '%s'", opts[i].def);
        fprintf(f, ")\n");
    }
    fprintf(f, "  --help\n      this text\n  --version\n      the version\n");
    if (p->footer)
        fprintf(f, "\n%s\n", p->footer);
}

int ty_opts_parse(const struct ty_opts_prog *p, const struct ty_opt *opts, size_t n,
                  const char **values, int argc, char **argv)
{
    for (size_t i = 0; i < n; i++) {
        const char *v = opts[i].env ? getenv(opts[i].env) : NULL;
        values[i] = v && *v ? v : opts[i].def;
    }
    for (int a = 1; a < argc; a++) {
        const char *arg = argv[a], *eq;
        size_t nl, i;

        if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
            ty_opts_usage(stdout, p, opts, n);
            exit(0);
        }
        if (strcmp(arg, "--version") == 0) {
            printf("%s %s\n", p->name, p->version);
            exit(0);
        }
        if (strncmp(arg, "--", 2) != 0) {
            fprintf(stderr, "%s: unexpected argument '%.200s' (see --help)\n", p->name, arg);
            return -1;
        }
        eq = strchr(arg, '=');
        nl = eq ? (size_t)(eq - arg - 2) : strlen(arg + 2);
        for (i = 0; i < n; i++)
            if (strlen(opts[i].flag) == nl && strncmp(arg + 2, opts[i].flag, nl) == 0)
                break;
        if (i == n) {
            fprintf(stderr, "%s: unknown option '%.*s' (see --help)\n", p->name,
                    (int)(nl + 2 < 200 ? nl + 2 : 200), arg);
            return -1;
        }
        if (eq) {
            values[i] = eq + 1;
        } else if (a + 1 < argc) {
            values[i] = argv[++a];
        } else {
            fprintf(stderr, "%s: --%s needs a value\n", p->name, opts[i].flag);
            return -1;
        }
    }
    return 0;
}

int ty_opts_int(const struct ty_opts_prog *p, const char *flag, const char *v, long lo, long hi,
                int *out)
{
    char *end;
    long x;

    if (v && *v) {
        x = strtol(v, &end, 10);
        if (!*end && x >= lo && x <= hi) {
            *out = (int)x;
            return 0;
        }
    }
    fprintf(stderr, "%s: --%s must be an integer from %ld to %ld, not '%.100s'\n", p->name, flag,
            lo, hi, v ? v : "");
    return -1;
}
