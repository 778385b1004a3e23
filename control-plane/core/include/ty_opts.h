/*
 * ty_opts.h - command-line options of trainyard's programs: each option a flag, an environment
 * variable and a default (flags win over variables, variables over defaults), --help and
 * --version, and integer checks, with one clear line on stderr for every mistake.
 *
 * Owns: nothing; the values point into argv, the environment or the table's defaults.
 */
#ifndef TY_CORE_TY_OPTS_H
#define TY_CORE_TY_OPTS_H

#include <stddef.h>
#include <stdio.h>

struct ty_opt {
    const char *flag; /* without the leading "--" */
    const char *env;  /* its variable; an empty one counts as unset */
    const char *def;  /* default; NULL = unset */
    const char *help;
};

struct ty_opts_prog {
    const char *name;    /* "trainyard-server": the prefix of every message */
    const char *version; /* printed by --version */
    const char *about;   /* --help's text before the options (may be NULL) */
    const char *footer;  /* --help's text after them (may be NULL) */
};

/*
 * OUT: values[i] (borrowed) for each of the n options: the last --flag VALUE or --flag=VALUE,
 * else its variable when set and non-empty, else its default. --help (or -h) prints the usage
 * to stdout and --version the version, then exit(0). Returns 0, or -1 after one line on stderr
 * (unknown option, stray argument, missing value).
 */
int ty_opts_parse(const struct ty_opts_prog *p, const struct ty_opt *opts, size_t n,
                  const char **values, int argc, char **argv);

/* Prints the usage: about, one entry per option (flag, help, variable, default), footer. */
void ty_opts_usage(FILE *f, const struct ty_opts_prog *p, const struct ty_opt *opts, size_t n);

/* 0 and OUT: *out when v is an integer in [lo, hi]; else -1 after
   "<prog>: --<flag> must be an integer from lo to hi, not '<v>'" on stderr. */
int ty_opts_int(const struct ty_opts_prog *p, const char *flag, const char *v, long lo, long hi,
                int *out);

#endif
