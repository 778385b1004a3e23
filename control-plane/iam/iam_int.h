/*
 * iam_int.h - what the files of ty_iam share (iam.c, iam_match.c, iam_eval.c,
 * iam_validate.c): the compiled form of a policy (statements, patterns, condition blocks in
 * one arena per policy), the condition operators' table entry, and the iam__* functions one
 * file calls in another. Not part of the library's contract (iam.h).
 *
 * Invariant: a compiled policy is never written after iam_policy_parse returns (iam.c).
 */
#ifndef TY_CP_IAM_INT_H
#define TY_CP_IAM_INT_H

#include "iam.h"
#include "ty_buf.h"

#include <jansson.h>

/* ---------------------------------------------------------------------------------------- */
/* arena: every allocation of a policy lives in its blocks and is freed at once */

struct iam__blk {
    struct iam__blk *next;
    size_t used, cap;
    max_align_t data[];
};

struct iam__arena {
    struct iam__blk *head;
};

/* ---------------------------------------------------------------------------------------- */
/* compiled policy */

enum iam__kind {
    K_STR_EQ,
    K_STR_EQ_CI,
    K_STR_LIKE,
    K_NUM_EQ,
    K_NUM_LT,
    K_NUM_LE,
    K_NUM_GT,
    K_NUM_GE,
    K_DATE_EQ,
    K_DATE_LT,
    K_DATE_LE,
    K_DATE_GT,
    K_DATE_GE,
    K_BOOL,
    K_BIN_EQ,
    K_IP,
    K_ARN,
    K_NULL,
};

enum iam__set { SET_NONE, SET_ANY, SET_ALL };

struct iam__opdef {
    const char *name;
    enum iam__kind kind;
    int negated;
};

struct iam__str {
    const char *s;
    int vars; /* 1 when the text holds ${...} and the policy is 2012-10-17 */
};

struct iam__ckey {
    const char *key;
    struct iam__str *values;
    size_t nvalues;
};

struct iam__cond {
    const struct iam__opdef *op;
    enum iam__set set;
    int if_exists;
    struct iam__ckey *keys;
    size_t nkeys;
};

struct iam__stmt {
    const char *sid; /* "" when none */
    int deny;
    int not_action;
    int not_resource;
    struct iam__str *actions;
    size_t nactions;
    struct iam__str *resources;
    size_t nresources;
    struct iam__cond *conds;
    size_t nconds;
};

struct iam_policy {
    struct iam__arena arena;
    int v2012;
    struct iam__stmt *stmts;
    size_t nstmts;
};

/* iam_validate.c */
int iam__json_depth_ok(const char *s, size_t n, int limit);
int iam__doc_charset_ok(const char *doc, size_t n);
int iam__is_str_or_str_array(json_t *v, int allow_empty);
const struct iam__opdef *iam__op_lookup(const char *name, enum iam__set *set, int *if_exists);
json_t *iam__stmt_at(json_t *stmts, size_t i);
size_t iam__stmt_count(json_t *stmts);
int iam__check_grammar(json_t *root, int *has_principal);
int iam__check_semantics(json_t *root, unsigned flags, char *msg, size_t n);

/* iam_match.c */
int iam__lc(int c);
int iam__ieq(const char *a, const char *b);
size_t iam__count_char(const char *s, char c);
int iam__parse_uint(const char *s, size_t n, long long *v);
int iam__glob_match(const char *p, size_t pn, const char *s, size_t sn, int ci, int esc);
int iam__arn_match(const char *p, size_t pn, const char *s, size_t sn, int esc);
const char *iam__ctx_value(const struct iam_ctx_entry *e, size_t i);
const struct iam_ctx_entry *iam__ctx_find(const struct iam_request *req, const char *key,
                                          size_t keylen);
size_t iam__ctx_count(const struct iam_ctx_entry *e);
int iam__resolve(const char *raw, int esc, const struct iam_request *req, struct ty_buf *b);

#endif
