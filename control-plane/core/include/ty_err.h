/*
 * ty_err.h - the one error type of trainyard's control plane.
 *
 * Owns: the error-code table (TY_ERR_MAP), the AWS error name and HTTP status of each code,
 * and struct ty_err, which carries a code, the offending field and a message up to the protocol
 * layer. Only route.c turns a ty_err into a wire form. Codes are only ever appended.
 */
#ifndef TY_CORE_TY_ERR_H
#define TY_CORE_TY_ERR_H

/* X(NAME, number, short description, AWS error name, HTTP status) */
#define TY_ERR_MAP(X)                                                                              \
    X(OK, 0, "success", "", 200)                                                                   \
    X(INVAL, 1, "invalid input", "ValidationException", 400)                                       \
    X(NOTFOUND, 2, "resource not found", "ResourceNotFound", 400)                                  \
    X(INUSE, 3, "resource in use", "ResourceInUse", 400)                                           \
    X(LIMIT, 4, "resource limit exceeded", "ResourceLimitExceeded", 400)                           \
    X(DENIED, 5, "access denied", "AccessDeniedException", 403)                                    \
    X(THROTTLE, 6, "throttled", "ThrottlingException", 400)                                        \
    X(INTERNAL, 7, "internal failure", "InternalFailure", 500)                                     \
    X(NOAUTH, 8, "missing authentication token", "MissingAuthenticationTokenException", 403)       \
    X(BADKEY, 9, "unrecognized client", "UnrecognizedClientException", 403)                        \
    X(BADSIG, 10, "invalid signature", "InvalidSignatureException", 403)                           \
    X(UNKNOWNOP, 11, "unknown operation", "UnknownOperationException", 400)                        \
    X(SERIAL, 12, "malformed request body", "SerializationException", 400)                         \
    X(NOMEM, 13, "out of memory", "InternalFailure", 500)                                          \
    X(IO, 14, "i/o error", "InternalFailure", 500)                                                 \
    X(REDIS, 15, "redis error", "ServiceUnavailable", 503)                                         \
    X(ENGINE, 16, "container engine error", "InternalFailure", 500)                                \
    X(TOOBIG, 17, "request too large", "ValidationException", 413)                                 \
    X(LOGNOTFOUND, 18, "log resource not found", "ResourceNotFoundException", 400)                 \
    X(CONFLICT, 19, "conflict", "ConflictException", 400)                                          \
    X(GPU, 20, "gpu error", "InternalFailure", 500)                                                \
    X(MALFORMED, 21, "malformed policy document", "MalformedPolicyDocument", 400)                  \
    X(INCOMPLETESIG, 22, "incomplete signature", "IncompleteSignatureException", 400)              \
    X(EXPIREDTOKEN, 23, "expired security token", "ExpiredTokenException", 400)                    \
    X(PWPOLICY, 24, "password policy violation", "ValidationException", 400)                       \
    X(USERTYPE, 25, "invalid user type", "ValidationException", 400)

enum ty_code {
#define TY__ERR_ENUM(name, num, desc, aws, http) TY_E##name = num,
    TY_ERR_MAP(TY__ERR_ENUM)
#undef TY__ERR_ENUM
};

struct ty_err {
    int code;       /* enum ty_code, TY_EOK when no error */
    char field[64]; /* the request member at fault, "" when none */
    char msg[1024]; /* the wire message, AWS's wording */
};

/* Clears err (code TY_EOK, empty strings). err may be NULL. */
void ty_err_clear(struct ty_err *err);

/*
 * Records code, field (may be NULL) and a printf-style message in err (which may be NULL) and
 * returns -code, so that `return ty_err_set(err, TY_EINVAL, "TrainingJobName", "...")` works.
 * field and the message's arguments may point into err (`"prefix: %s", err->msg` keeps the old
 * message after the prefix).
 */
int ty_err_set(struct ty_err *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Short lower-case description of a code; "unknown error" for codes outside the table. */
const char *ty_strerror(int code);
/* The AWS error name (`__type`) of a code. Borrowed static string. */
const char *ty_err_aws_name(int code);
/* The HTTP status of a code. */
int ty_err_http_status(int code);

#endif
