/*
 * iam.c - IAM identity-policy parsing (see iam.h): the policy arena, compiling a validated
 * document into the arena, the parse entry points, the AccessDenied wording and the trust
 * policy check.
 *
 * The rest of ty_iam shares iam_int.h: the matchers and policy variables (iam_match.c), the
 * condition operators and evaluation (iam_eval.c), IAM's validation stages (iam_validate.c).
 * Does not own: the policies' storage or the request context (both borrowed).
 *
 * Invariants: a struct iam_policy never changes after iam_policy_parse returns, and
 * evaluation writes only to its own stack and to buffers it allocates, so shared policies
 * are safe to evaluate from any number of threads. Nothing here recurses on input: JSON depth
 * is checked by a flat pre-scan before jansson sees the text, and the matchers are loops.
 */
#define _GNU_SOURCE /* strcasestr */
#include "iam.h"
#include "iam_int.h"

#include <string.h>

#define IAM__FIELD  "PolicyDocument"
#define IAM__SYNTAX "Syntax errors in policy."

/* ---------------------------------------------------------------------------------------- */
/* the policy arena (struct iam__arena): every allocation of a policy, freed at once */

static void *arena_alloc(struct iam__arena *a, size_t n)
{
    size_t al = sizeof(max_align_t);
    n = (n + al - 1) / al * al;
    if (n == 0)
        n = al;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > 8192 ? n : 8192;
        struct iam__blk *b = malloc(sizeof(*b) + cap);
        if (!b)
            return NULL;
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = (char *)a->head->data + a->head->used;
    a->head->used += n;
    return p;
}

static char *arena_strdup(struct iam__arena *a, const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = arena_alloc(a, n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void arena_free(struct iam__arena *a)
{
    struct iam__blk *b = a->head;
    while (b) {
        struct iam__blk *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* compilation into the arena */

static int compile_str(struct iam_policy *p, const char *s, struct iam__str *out)
{
    out->s = arena_strdup(&p->arena, s);
    out->vars = p->v2012 && strstr(s, "${") != NULL;
    return out->s ? 0 : -1;
}

static int compile_list(struct iam_policy *p, json_t *v, struct iam__str **out, size_t *nout)
{
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    *out = arena_alloc(&p->arena, n * sizeof(**out));
    *nout = n;
    if (!*out)
        return -1;
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_is_array(v) ? json_array_get(v, i) : v;
        if (compile_str(p, json_string_value(e), &(*out)[i]) < 0)
            return -1;
    }
    return 0;
}

static int scalar_text(json_t *v, char *buf, size_t n, const char **out)
{
    if (json_is_string(v)) {
        *out = json_string_value(v);
    } else if (json_is_integer(v)) {
        snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        *out = buf;
    } else if (json_is_real(v)) {
        snprintf(buf, n, "%.17g", json_real_value(v));
        *out = buf;
    } else {
        *out = json_is_true(v) ? "true" : "false";
    }
    return 0;
}

static int compile_cond(struct iam_policy *p, json_t *cond, struct iam__stmt *st)
{
    const char *opname;
    json_t *body;
    size_t n = 0;
    st->nconds = 0;
    st->conds = NULL;
    if (!cond)
        return 0;
    st->conds = arena_alloc(&p->arena, (json_object_size(cond) + 1) * sizeof(*st->conds));
    if (!st->conds)
        return -1;
    json_object_foreach(cond, opname, body)
    {
        struct iam__cond *c = &st->conds[n];
        const char *ck;
        json_t *cv;
        size_t k = 0;
        c->op = iam__op_lookup(opname, &c->set, &c->if_exists);
        if (!c->op || json_object_size(body) == 0)
            continue; /* an unknown operator with an empty body is accepted and ignored */
        c->keys = arena_alloc(&p->arena, json_object_size(body) * sizeof(*c->keys));
        if (!c->keys)
            return -1;
        json_object_foreach(body, ck, cv)
        {
            struct iam__ckey *key = &c->keys[k++];
            size_t nv = json_is_array(cv) ? json_array_size(cv) : 1;
            key->key = arena_strdup(&p->arena, ck);
            key->values = arena_alloc(&p->arena, (nv ? nv : 1) * sizeof(*key->values));
            key->nvalues = nv;
            if (!key->key || !key->values)
                return -1;
            for (size_t i = 0; i < nv; i++) {
                char num[64];
                const char *text;
                scalar_text(json_is_array(cv) ? json_array_get(cv, i) : cv, num, sizeof(num),
                            &text);
                if (compile_str(p, text, &key->values[i]) < 0)
                    return -1;
                if (c->op->kind == K_NULL)
                    key->values[i].vars = 0;
            }
        }
        c->nkeys = k;
        n++;
    }
    st->nconds = n;
    return 0;
}

static int compile(struct iam_policy *p, json_t *root)
{
    json_t *stmts = json_object_get(root, "Statement");
    json_t *ver = json_object_get(root, "Version");
    p->v2012 = ver && strcmp(json_string_value(ver), "2012-10-17") == 0;
    p->nstmts = iam__stmt_count(stmts);
    p->stmts = arena_alloc(&p->arena, p->nstmts * sizeof(*p->stmts));
    if (!p->stmts)
        return -1;
    for (size_t s = 0; s < p->nstmts; s++) {
        json_t *js = iam__stmt_at(stmts, s), *v;
        struct iam__stmt *st = &p->stmts[s];
        const char *sid = json_string_value(json_object_get(js, "Sid"));
        st->sid = arena_strdup(&p->arena, sid ? sid : "");
        if (!st->sid)
            return -1;
        st->deny = strcmp(json_string_value(json_object_get(js, "Effect")), "Deny") == 0;
        v = json_object_get(js, "Action");
        st->not_action = v == NULL;
        if (!v)
            v = json_object_get(js, "NotAction");
        if (compile_list(p, v, &st->actions, &st->nactions) < 0)
            return -1;
        v = json_object_get(js, "Resource");
        st->not_resource = v == NULL;
        if (!v)
            v = json_object_get(js, "NotResource");
        if (compile_list(p, v, &st->resources, &st->nresources) < 0)
            return -1;
        if (compile_cond(p, json_object_get(js, "Condition"), st) < 0)
            return -1;
    }
    return 0;
}

int iam_policy_parse_ex(const char *json, size_t len, unsigned flags, struct iam_policy **out,
                        struct ty_err *err)
{
    struct iam_policy *p = NULL;
    json_t *root = NULL;
    json_error_t jerr;
    char msg[1024];
    int has_principal = 0, rc;

    if (!json || !out)
        return ty_err_set(err, TY_EINVAL, IAM__FIELD, "policy document is required");
    if (len == 0 || len > IAM_MAX_DOC_BYTES)
        return ty_err_set(err, TY_EINVAL, IAM__FIELD,
                          "1 validation error detected: Value at 'policyDocument' failed to "
                          "satisfy constraint: Member must have length %s",
                          len == 0 ? "greater than or equal to 1" : "less than or equal to 131072");
    if (!iam__doc_charset_ok(json, len))
        return ty_err_set(err, TY_EINVAL, IAM__FIELD,
                          "1 validation error detected: Value at 'policyDocument' failed to "
                          "satisfy constraint: Member must satisfy regular expression pattern: "
                          "[\\u0009\\u000A\\u000D\\u0020-\\u00FF]+");
    if (iam_policy_chars(json, len) > IAM_MAX_CHARS)
        return ty_err_set(err, TY_ELIMIT, IAM__FIELD, "Cannot exceed quota for PolicySize: %d",
                          IAM_MAX_CHARS);
    if (!iam__json_depth_ok(json, len, IAM_MAX_DEPTH))
        return ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
    root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
    if (iam__check_grammar(root, &has_principal) < 0) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD, IAM__SYNTAX);
        goto fail;
    }
    if (has_principal) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD,
                        "Policy document should not specify a principal.");
        goto fail;
    }
    if (iam__check_semantics(root, flags, msg, sizeof(msg)) < 0) {
        rc = ty_err_set(err, TY_EMALFORMED, IAM__FIELD, "%s", msg);
        goto fail;
    }
    p = calloc(1, sizeof(*p));
    if (!p || compile(p, root) < 0) {
        rc = ty_err_set(err, TY_ENOMEM, IAM__FIELD, "out of memory");
        goto fail;
    }
    json_decref(root);
    *out = p;
    return 0;
fail:
    iam_policy_free(p);
    json_decref(root);
    return rc;
}

/* 1 when text holds a ${...} variable whose key contains needle (case-insensitively). */
static int iam_vars_use(const struct iam__str *v, const char *needle)
{
    const char *p = v->vars ? v->s : NULL;
    while (p && (p = strstr(p, "${")) != NULL) {
        const char *end = strchr(p, '}');
        char key[256];
        size_t n;
        if (!end)
            break;
        n = (size_t)(end - p - 2) < sizeof(key) - 1 ? (size_t)(end - p - 2) : sizeof(key) - 1;
        memcpy(key, p + 2, n);
        key[n] = '\0';
        if (strcasestr(key, needle))
            return 1;
        p = end + 1;
    }
    return 0;
}

int iam_policy_uses_key(const struct iam_policy *p, const char *needle)
{
    if (!p || !needle)
        return 0;
    for (size_t i = 0; i < p->nstmts; i++) {
        const struct iam__stmt *st = &p->stmts[i];
        for (size_t r = 0; r < st->nresources; r++)
            if (iam_vars_use(&st->resources[r], needle))
                return 1;
        for (size_t c = 0; c < st->nconds; c++)
            for (size_t k = 0; k < st->conds[c].nkeys; k++) {
                const struct iam__ckey *ck = &st->conds[c].keys[k];
                if (strcasestr(ck->key, needle))
                    return 1;
                for (size_t v = 0; v < ck->nvalues; v++)
                    if (iam_vars_use(&ck->values[v], needle))
                        return 1;
            }
    }
    return 0;
}

int iam_policy_each_key(const struct iam_policy *p, int (*fn)(const char *key, void *ud), void *ud)
{
    for (size_t i = 0; p && i < p->nstmts; i++)
        for (size_t c = 0; c < p->stmts[i].nconds; c++)
            for (size_t k = 0; k < p->stmts[i].conds[c].nkeys; k++) {
                int r = fn(p->stmts[i].conds[c].keys[k].key, ud);
                if (r)
                    return r;
            }
    return 0;
}

int iam_policy_parse(const char *json, size_t len, struct iam_policy **out, struct ty_err *err)
{
    return iam_policy_parse_ex(json, len, 0, out, err);
}

void iam_policy_free(struct iam_policy *p)
{
    if (!p)
        return;
    arena_free(&p->arena);
    free(p);
}

size_t iam_policy_nstatements(const struct iam_policy *p)
{
    return p ? p->nstmts : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* AccessDenied */

int iam_denial_message(char *buf, size_t n, const char *principal_arn, const char *action,
                       const char *resource, enum iam_decision d, const char *policy_arn)
{
    char on[1200] = "";
    action = action ? action : "";
    if (resource && *resource && strcmp(resource, "*") != 0)
        snprintf(on, sizeof(on), " on resource: %s", resource);
    if (d == IAM_DENY_EXPLICIT)
        return snprintf(buf, n,
                        "User: %s is not authorized to perform: %s%s with an explicit deny in "
                        "an identity-based policy%s%s",
                        principal_arn ? principal_arn : "", action, on,
                        policy_arn && *policy_arn ? ": " : "", policy_arn ? policy_arn : "");
    return snprintf(buf, n,
                    "User: %s is not authorized to perform: %s%s because no identity-based "
                    "policy allows the %s action",
                    principal_arn ? principal_arn : "", action, on, action);
}

int iam_deny_error(struct ty_err *err, const char *principal_arn, const struct iam_request *req,
                   enum iam_decision d, const char *policy_arn)
{
    char msg[sizeof(err->msg)];
    iam_denial_message(msg, sizeof(msg), principal_arn, req ? req->action : NULL,
                       req ? req->resource : NULL, d, policy_arn);
    return ty_err_set(err, TY_EDENIED, "", "%s", msg);
}

/* ---- trust policies ---- */

/* Whether the Principal (or NotPrincipal) value p names service: "*", {"AWS": "*"} or
   {"Service": service}. -1 when p is not a valid principal element. */
static int trust_principal_names(json_t *p, const char *service)
{
    const char *k;
    json_t *v;
    int found = 0;

    if (json_is_string(p))
        return strcmp(json_string_value(p), "*") == 0 ? 1 : -1;
    if (!json_is_object(p) || json_object_size(p) == 0)
        return -1;
    json_object_foreach(p, k, v)
    {
        size_t i, n = json_is_array(v) ? json_array_size(v) : 1;
        if (strcmp(k, "AWS") != 0 && strcmp(k, "Service") != 0 && strcmp(k, "Federated") != 0 &&
            strcmp(k, "CanonicalUser") != 0)
            return -1;
        if (!iam__is_str_or_str_array(v, 1))
            return -1;
        for (i = 0; i < n; i++) {
            const char *s = json_string_value(json_is_array(v) ? json_array_get(v, i) : v);
            if (!s || !*s)
                return -1;
            if (strcmp(k, "AWS") == 0 && strcmp(s, "*") == 0)
                found = 1;
            if (service && strcmp(k, "Service") == 0 && strcmp(s, service) == 0)
                found = 1;
        }
    }
    return found;
}

int iam_trust_check(const char *json, size_t len, const char *service, const char *action,
                    const struct iam_ctx_entry *ctx, size_t nctx, int *allowed, struct ty_err *err)
{
    json_t *root = NULL, *stmts, *all = NULL, *mine = NULL, *doc = NULL;
    struct iam_policy *p = NULL;
    json_error_t jerr;
    char *text = NULL;
    int rc = 0;

    if (allowed)
        *allowed = 0;
    if (!json || len == 0 || len > IAM_MAX_DOC_BYTES)
        return ty_err_set(err, TY_EINVAL, "AssumeRolePolicyDocument",
                          "1 validation error detected: Value at 'assumeRolePolicyDocument' "
                          "failed to satisfy constraint: Member must have length %s",
                          len == 0 ? "greater than or equal to 1" : "less than or equal to 131072");
    if (iam_policy_chars(json, len) > IAM_MAX_CHARS_TRUST)
        return ty_err_set(err, TY_ELIMIT, "AssumeRolePolicyDocument",
                          "Cannot exceed quota for ACLSizePerRole: %d", IAM_MAX_CHARS_TRUST);
    if (!iam__json_depth_ok(json, len, IAM_MAX_DEPTH) ||
        !(root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr)) || !json_is_object(root))
        goto syntax;
    stmts = json_object_get(root, "Statement");
    if (!stmts || !(json_is_object(stmts) || json_is_array(stmts)) ||
        (json_is_array(stmts) && json_array_size(stmts) == 0))
        goto syntax;
    all = json_array();
    mine = json_array();
    if (!all || !mine) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < iam__stmt_count(stmts); i++) {
        json_t *st = iam__stmt_at(stmts, i), *pr, *np, *copy;
        int names;
        if (!json_is_object(st))
            goto syntax;
        pr = json_object_get(st, "Principal");
        np = json_object_get(st, "NotPrincipal");
        if (!pr && !np) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Missing required field Principal");
            goto done;
        }
        if (json_object_get(st, "Resource") || json_object_get(st, "NotResource")) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Has prohibited field Resource");
            goto done;
        }
        if (pr && np)
            goto syntax;
        names = trust_principal_names(pr ? pr : np, service);
        if (names < 0) {
            rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument",
                            "Invalid principal in policy");
            goto done;
        }
        copy = json_deep_copy(st);
        if (!copy) {
            rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
            goto done;
        }
        json_object_del(copy, "Principal");
        json_object_del(copy, "NotPrincipal");
        json_object_set_new(copy, "Resource", json_string("*"));
        if (pr ? names : !names)
            json_array_append(mine, copy);
        json_array_append_new(all, copy);
    }
    /* the statements without their principals are identity statements: IAM's checks */
    doc = json_object();
    if (json_object_get(root, "Version"))
        json_object_set(doc, "Version", json_object_get(root, "Version"));
    json_object_set(doc, "Statement", all);
    text = json_dumps(doc, JSON_COMPACT);
    if (!text) {
        rc = ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    rc = iam_policy_parse(text, strlen(text), &p, err);
    if (rc) {
        if (err && (rc == -TY_EMALFORMED || rc == -TY_EINVAL))
            snprintf(err->field, sizeof(err->field), "AssumeRolePolicyDocument");
        goto done;
    }
    iam_policy_free(p);
    p = NULL;
    if (!service || !allowed || json_array_size(mine) == 0)
        goto done;
    free(text);
    json_object_set(doc, "Statement", mine);
    text = json_dumps(doc, JSON_COMPACT);
    if (!text || iam_policy_parse(text, strlen(text), &p, err) != 0) {
        rc = text && err ? -err->code : ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
        goto done;
    }
    {
        struct iam_request req = {action ? action : "sts:AssumeRole", "*", ctx, nctx};
        const struct iam_policy *pp = p;
        *allowed = iam_evaluate(&pp, 1, &req) == IAM_ALLOW;
    }
    goto done;
syntax:
    rc = ty_err_set(err, TY_EMALFORMED, "AssumeRolePolicyDocument", IAM__SYNTAX);
done:
    iam_policy_free(p);
    free(text);
    json_decref(doc);
    json_decref(all);
    json_decref(mine);
    json_decref(root);
    return rc;
}
