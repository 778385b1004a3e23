#ifndef TY_PROFILER_JSONMINI_H
#define TY_PROFILER_JSONMINI_H
/*
 * jsonmini.h - a small JSON reader (RFC 8259 values into a tree) for the CLI's report and
 * rules, so that the runtime image needs no JSON library. Depth ≤ 64; strings are unescaped
 * into UTF-8; numbers are doubles. Not thread-safe per tree; trees are independent.
 */
#include <stddef.h>

enum jm_type { JM_NULL, JM_BOOL, JM_NUM, JM_STR, JM_ARR, JM_OBJ };

struct jm_val {
    enum jm_type type;
    double num;           /* JM_NUM, JM_BOOL (0/1) */
    char *str;            /* JM_STR */
    size_t n;             /* JM_ARR/JM_OBJ: number of items */
    struct jm_val *items; /* JM_ARR/JM_OBJ values */
    char **keys;          /* JM_OBJ keys, parallel to items */
};

/* Parses text[0..len). Returns a new tree (caller frees with jm_free()), or NULL on a syntax
 * error, with the byte offset of the error in *err_off when err_off is not NULL. */
struct jm_val *jm_parse(const char *text, size_t len, size_t *err_off);
/* Frees a tree; NULL is a no-op. */
void jm_free(struct jm_val *v);
/* Borrowed lookups: the member key of an object, item i of an array; NULL if absent/wrong type. */
const struct jm_val *jm_get(const struct jm_val *obj, const char *key);
const struct jm_val *jm_at(const struct jm_val *arr, size_t i);
/* Convenience: number/string of member key, or def. */
double jm_num(const struct jm_val *obj, const char *key, double def);
const char *jm_str(const struct jm_val *obj, const char *key, const char *def);
/* Reads a whole file. Returns a new NUL-terminated buffer (caller frees with free()) and its
 * length in *len, or NULL. Refuses files over max bytes. */
char *jm_read_file(const char *path, size_t max, size_t *len);

#endif /* TY_PROFILER_JSONMINI_H */
