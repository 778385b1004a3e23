/*
 * iam.h - IAM identity-policy documents: parsing, validation and evaluation.
 *
 * Owns: the policy grammar (Version, Id, Statement; Sid, Effect, Action/NotAction,
 * Resource/NotResource, Condition) and IAM's validation messages (MalformedPolicyDocument);
 * the evaluation logic (explicit Deny > Allow > implicit deny), action and ARN wildcard
 * matching, policy variables, every condition operator with the IfExists suffix and the
 * ForAnyValue:/ForAllValues: set qualifiers; AWS's AccessDenied message.
 * Does not own: where policies are stored, which policies apply to a principal, or which
 * action, resource ARN and condition keys an operation has (the caller builds the request).
 * No Redis, no HTTP, no global state.
 *
 * Invariants: a parsed policy is immutable, so any number of threads may evaluate shared
 * policies at once. Matching is iterative (no recursion on input), every input is bounded
 * (document size, JSON depth, element counts) and evaluation fails closed: an internal error
 * (out of memory) yields IAM_DENY_IMPLICIT.
 *
 * Limits (documented choice): IAM counts a policy's size without white space. A single
 * document may hold at most IAM_MAX_CHARS (6144, the managed-policy quota) such characters;
 * the aggregate quota of a user's inline policies (2048) spans several documents, so the
 * caller enforces it with iam_policy_chars(). The raw text may be at most IAM_MAX_DOC_BYTES
 * (131072, the PolicyDocument length constraint of IAM's API).
 *
 * Matching (as IAM documents it): actions are case-insensitive globs ('*' any run, '?' one
 * character); resources are compared as ARNs, field by colon-separated field, case-sensitively,
 * with wildcards inside a field, the sixth field keeping its colons, and a '*' that ends the
 * last field of a shorter pattern running on across colons ("arn:aws:sagemaker:*"). ArnEquals
 * and ArnLike are the same matcher; StringLike is a case-sensitive glob over the whole value.
 * Conditions: operators AND, keys within an operator AND, values of a key OR. A missing key
 * fails positive operators and satisfies negated ones (StringNotEquals, NotIpAddress, ...);
 * ...IfExists and ForAllValues: are satisfied by a missing key, ForAnyValue: is not. Without
 * a qualifier a positive operator needs one request value to match and a negated one needs
 * none to. A request value of the wrong type (not a number, date, IP) satisfies no operator.
 * Variables (${key}, ${key, 'default'}, ${*}, ${?}, ${$}) are resolved in Resource/NotResource
 * and condition values; the text they produce is literal (a tag value "*" is no wildcard).
 * Deliberate strictness: duplicate JSON keys are a syntax error (IAM keeps the last one).
 */
#ifndef TY_CP_IAM_H
#define TY_CP_IAM_H

#include <stddef.h>

#include "ty_err.h"

#define IAM_MAX_DOC_BYTES         131072 /* PolicyDocument maximum length in IAM's API model */
#define IAM_MAX_CHARS             6144   /* non-white-space characters in one document */
#define IAM_MAX_CHARS_USER_INLINE 2048   /* aggregate of one user's inline policies */
#define IAM_MAX_DEPTH             8      /* JSON nesting; a valid policy needs 6 */
#define IAM_MAX_CHARS_TRUST       2048   /* a role's trust policy (ACLSizePerRole) */

/* Flags of iam_policy_parse_ex. */
#define IAM_PARSE_MANAGED 0x1u /* CreatePolicy rules: Version must be 2012-10-17 */

enum iam_decision {
    IAM_DENY_IMPLICIT = 0, /* no statement allows the request */
    IAM_ALLOW = 1,         /* an Allow statement applies and no Deny does */
    IAM_DENY_EXPLICIT = 2, /* a Deny statement applies */
};

/* A parsed policy document (opaque, immutable). */
struct iam_policy;

/*
 * One condition key of the request context. Key names compare case-insensitively (as IAM's
 * do); values case-sensitively unless the operator says otherwise. A multi-valued key
 * (aws:TagKeys, sagemaker:InstanceTypes) sets values/nvalues; a single-valued one may set
 * value instead (used when values is NULL). A key with no values counts as absent.
 */
struct iam_ctx_entry {
    const char *key;           /* borrowed: "aws:username", "aws:RequestTag/team", ... */
    const char *const *values; /* borrowed: nvalues strings, or NULL */
    size_t nvalues;
    const char *value; /* borrowed: the one value when values is NULL; NULL for none */
};

/* What is being authorised. Every string is borrowed for the duration of the call. */
struct iam_request {
    const char *action;   /* "sagemaker:CreateApp" */
    const char *resource; /* the resource ARN, or "*" for actions without resource types */
    const struct iam_ctx_entry *context; /* condition keys; the first entry of a key wins */
    size_t ncontext;
};

/* Which statement decided (for the denial message and audit logs). */
struct iam_explain {
    size_t policy;    /* index into policies[] of the deciding statement's policy */
    size_t statement; /* index of the statement within that policy */
    const char *sid;  /* borrowed from the policy: its Sid, "" when none */
    int error;        /* 1 when evaluation failed (out of memory) and denied */
};

/*
 * Parses and validates a policy document of len bytes (need not be NUL-terminated) with the
 * rules of inline policies (PutUserPolicy): Version "2012-10-17", "2008-10-17" or absent;
 * policy variables are recognised only with 2012-10-17, as in IAM.
 * OUT: *out, written only on success. new: caller frees with iam_policy_free().
 * Returns 0, or:
 *  -TY_EMALFORMED with IAM's message, checked in IAM's order: "Syntax errors in policy."
 *   (bad JSON or UTF-8, duplicate keys, unknown elements, wrong types, bad Version, empty
 *   Statement, Effect not allow/deny, Action and NotAction together, unknown condition
 *   operator, nesting deeper than IAM_MAX_DEPTH); "Policy document should not specify a
 *   principal."; "Policy document must be version 2012-10-17 or greater." (managed only);
 *   "The policy failed legacy parsing" (Effect not exactly Allow/Deny, bad date condition
 *   value, ARN with too few parts); "Statement IDs (SID) in a single policy must be unique.";
 *   "Policy statement must contain actions."; "Policy statement must contain resources.";
 *   the resource format messages ("Resource X must be in ARN format or \"*\".", "Partition
 *   ...", "Resource vendor must be fully qualified and cannot contain regexes.", region and
 *   IAM path rules); the action messages ("Actions/Conditions must be prefaced by a vendor,
 *   e.g., iam, sdb, ec2, etc.", "Actions/Condition can contain only one colon.",
 *   "Vendor X is not valid"). err->field is "PolicyDocument".
 *  -TY_ELIMIT "Cannot exceed quota for PolicySize: 6144" over IAM_MAX_CHARS (IAM's wire
 *   code for it is LimitExceeded, 409: the IAM protocol layer maps it).
 *  -TY_EINVAL for a NULL argument or a text longer than IAM_MAX_DOC_BYTES (IAM's
 *   ValidationError wording); -TY_ENOMEM.
 * Thread-safe.
 */
int iam_policy_parse(const char *json, size_t len, struct iam_policy **out, struct ty_err *err);

/* As iam_policy_parse, with flags (IAM_PARSE_MANAGED). */
int iam_policy_parse_ex(const char *json, size_t len, unsigned flags, struct iam_policy **out,
                        struct ty_err *err);

/* Frees a policy; NULL is a no-op. */
void iam_policy_free(struct iam_policy *p);

/*
 * 1 when p, as parsed (JSON escapes decoded), names a key containing needle
 * (case-insensitively; e.g. "ResourceTag/"): a condition key of any statement, or a policy
 * variable (${...}) in its resources or condition values. 0 otherwise. Lets a caller fetch
 * only the context a decision needs, from what the policy means rather than how it is written.
 */
int iam_policy_uses_key(const struct iam_policy *p, const char *needle);

/* Calls fn(key, ud) for every condition key of every statement of p, in order (a key twice is
   seen twice), until fn returns nonzero. Returns that value, or 0. */
int iam_policy_each_key(const struct iam_policy *p, int (*fn)(const char *key, void *ud), void *ud);

/* Number of statements of a parsed policy. */
size_t iam_policy_nstatements(const struct iam_policy *p);

/*
 * The size IAM charges a document against its quotas: its characters (UTF-8 code points)
 * that are not white space. Never fails; counts at most len bytes.
 */
size_t iam_policy_chars(const char *json, size_t len);

/*
 * Evaluates a request against n identity policies (NULL entries are skipped), with IAM's
 * logic: any applicable Deny statement gives IAM_DENY_EXPLICIT; otherwise any applicable
 * Allow gives IAM_ALLOW; otherwise IAM_DENY_IMPLICIT. A statement applies when its
 * Action (or NotAction) matches the action, its Resource (or NotResource) matches the
 * resource, and every condition holds; a statement with a policy variable that cannot be
 * resolved (key absent or multi-valued, no default) does not apply.
 * OUT: why (may be NULL): the deciding statement for IAM_ALLOW and IAM_DENY_EXPLICIT.
 * Pure: the policies and the request are only read; thread-safe.
 */
enum iam_decision iam_evaluate(const struct iam_policy *const *policies, size_t n,
                               const struct iam_request *req);
enum iam_decision iam_evaluate_ex(const struct iam_policy *const *policies, size_t n,
                                  const struct iam_request *req, struct iam_explain *why);

/*
 * Writes AWS's AccessDenied message into OUT: buf (size n, always NUL-terminated when n > 0):
 * "User: <principal> is not authorized to perform: <action> on resource: <resource> because
 * no identity-based policy allows the <action> action", or, for IAM_DENY_EXPLICIT, "... with
 * an explicit deny in an identity-based policy" (followed by ": <policy_arn>" when policy_arn,
 * which may be NULL, names a managed policy). Returns the length the full message has, as
 * snprintf does.
 */
int iam_denial_message(char *buf, size_t n, const char *principal_arn, const char *action,
                       const char *resource, enum iam_decision d, const char *policy_arn);

/*
 * Records that denial in err (may be NULL) as TY_EDENIED (AccessDeniedException, 403) and
 * returns -TY_EDENIED, so that `return iam_deny_error(err, ...)` works.
 */
int iam_deny_error(struct ty_err *err, const char *principal_arn, const struct iam_request *req,
                   enum iam_decision d, const char *policy_arn);

/*
 * Trust policies (a role's AssumeRolePolicyDocument). Validates json as IAM's CreateRole does:
 * every statement needs a Principal or NotPrincipal ("Missing required field Principal"),
 * Resource/NotResource are refused ("Has prohibited field Resource"), a principal is "*" or an
 * object of AWS/Service/Federated/CanonicalUser strings ("Invalid principal in policy"); the
 * statements without their principals must pass iam_policy_parse (its messages, -TY_EMALFORMED),
 * and the document may hold IAM_MAX_CHARS_TRUST characters (-TY_ELIMIT "Cannot exceed quota for
 * ACLSizePerRole: 2048"). When service (e.g. "sagemaker.amazonaws.com") and allowed are not NULL,
 * OUT: *allowed = 1 when the statements whose principal names that service ("*" and
 * {"AWS":"*"} name every one) allow action (NULL: "sts:AssumeRole") with the condition keys
 * ctx[0..nctx) and no such statement denies it. Returns 0 or a negative code; err not NULL.
 */
int iam_trust_check(const char *json, size_t len, const char *service, const char *action,
                    const struct iam_ctx_entry *ctx, size_t nctx, int *allowed, struct ty_err *err);

#endif
