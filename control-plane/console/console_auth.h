/*
 * console_auth.h - who is signed in to the console: IAM users with a password (/console/login,
 * password.h) and Studio domain users through a presigned domain URL (console.c), one
 * session cookie for both, sign-out, and the CSRF token of every state-changing form.
 *
 * Owns: the session document (in Redis through store_res sessions, with an expiry):
 *   {"Kind": "iam", "Principal": <user ARN>, "UserName", "Csrf"} or
 *   {"Kind": "studio", "Principal": <the profile's execution role ARN>, "DomainId",
 *    "ProfileId", "UserProfileName", "UserProfileArn", "Csrf", ...}
 * the cookie (CONSOLE_AUTH_COOKIE: HttpOnly, SameSite=Strict, Path=/console, Secure when the
 * request came over TLS as X-Forwarded-Proto says), and the CSRF check (a per-session random
 * token, a hidden field of every form, compared in constant time; plus Origin, when sent, must
 * be this host). Sessions of an IAM user are scoped "iam-<lower-cased name>".
 * Does not own: the password check (ops/password.c), authorisation (every action goes through
 * console_call.c as Principal).
 * Thread-safety: reentrant.
 */
#ifndef TY_CP_CONSOLE_AUTH_H
#define TY_CP_CONSOLE_AUTH_H

#include <jansson.h>
#include <stddef.h>

#include "http.h"
#include "password.h"
#include "store.h"
#include "ty_err.h"

#define CONSOLE_AUTH_COOKIE  "ty_console" /* = OP_STUDIO_COOKIE */
#define CONSOLE_AUTH_SID_LEN 64
#define CONSOLE_AUTH_TTL_S   43200 /* an IAM user's session: 12 hours */

enum console_kind { CONSOLE_IAM = 1, CONSOLE_STUDIO = 2 };

struct console_sess {
    json_t *doc; /* new: the session document; console_auth_release frees it */
    char sid[CONSOLE_AUTH_SID_LEN + 1];
    enum console_kind kind;
    const char *principal; /* borrowed from doc: who the console acts as */
    const char *user;      /* borrowed: the name shown (IAM user or profile name) */
    const char *csrf;      /* borrowed */
};

/* Frees what s holds (s itself is the caller's). */
void console_auth_release(struct console_sess *s);

/*
 * The session of req's cookie. OUT: sess (written on success). 0, -TY_ENOTFOUND (no cookie,
 * unknown, expired or ended session), -TY_EREDIS.
 */
int console_auth_session(struct store *s, struct http_request *req, struct console_sess *sess,
                         struct ty_err *err);

/*
 * Signs IAM user name of account in with password; t (password.h) holds the client's
 * throttle source and device token, and gets the wait or the new device token back.
 * account must be account_id. OUT: sid (a new session id; n > CONSOLE_AUTH_SID_LEN). 0,
 * -TY_EDENIED (one message for every wrong input), -TY_ETHROTTLE (the client must wait:
 * t->wait_ms, and the message says how long), -TY_EREDIS.
 */
int console_auth_login(struct store *s, const char *account_id, const char *account,
                       const char *name, const char *password, struct password_try *t, char *sid,
                       size_t n, struct ty_err *err);

/* The cookie that holds a browser's device token (password.h). */
#define CONSOLE_DEVICE_COOKIE "ty_device"
/* How long a browser keeps its device token, seconds (180 days). */
#define CONSOLE_DEVICE_TTL_S (180 * 24 * 3600)

/* Starts a session of doc (borrowed; Csrf is added) for ttl_s seconds under scope. OUT: sid. */
int console_auth_start(struct store *s, json_t *doc, const char *scope, int ttl_s, char *sid,
                       size_t n, struct ty_err *err);

/* Ends req's session (sign-out); 0 also when there was none. */
int console_auth_logout(struct store *s, struct http_request *req, struct ty_err *err);

/* The Set-Cookie value for sid (NULL: the clearing one) valid max_age seconds. OUT: out. */
void console_auth_cookie(char *out, size_t n, const char *sid, int max_age, int secure);

/* 1 when req came over TLS (X-Forwarded-Proto: https from a proxy in front). */
int console_auth_secure(const struct http_request *req);

/*
 * 1 when a state-changing request of sess is genuine: its form field "csrf" (in the
 * url-encoded body) equals the session's token (constant time) and its Origin header, when
 * present, names the Host it was sent to ("Origin: null" never does). 0 otherwise.
 */
int console_auth_csrf_ok(const struct console_sess *sess, const struct http_request *req);

/* The value of form field name in req's url-encoded body (percent- and '+'-decoded, cut to
   n - 1 bytes). 1 when present, 0 when not. OUT: out. */
int console_auth_form(const struct http_request *req, const char *name, char *out, size_t n);

/* 1 when a and b are equal, in time independent of where they differ (both NUL-terminated). */
int console_auth_same(const char *a, const char *b);

#endif
