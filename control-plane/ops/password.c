/*
 * ops/password.c - login profiles, the password policy, the KDF and the sign-in throttle
 * (password.h).
 *
 * Invariants: a password reaches only the KDF (never a key, a log line or a reply). The
 * Redis side (keys, replies) is store_login.c's.
 */
#include "password.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store_iam.h"
#include "store_login.h"
#include "ty_codec.h"
#include "ty_rand.h"

/* A dummy hash verified for unknown users (same iteration count: same time). */
#define LOGIN_DUMMY                                                                                \
    PASSWORD_SCHEME "$310000$00000000000000000000000000000000$"                                    \
                    "0000000000000000000000000000000000000000000000000000000000000000"

/* ---- the password policy ---- */

void password_policy_default(struct password_policy *p)
{
    memset(p, 0, sizeof(*p));
    p->min_length = 8;
    p->allow_change = 1;
}

static int login_is_symbol(int c)
{
    /* IAM's symbol set: ! @ # $ % ^ & * ( ) _ + - = [ ] { } | ' */
    return c && strchr("!@#$%^&*()_+-=[]{}|'", c) != NULL;
}

int password_policy_check(const struct password_policy *p, const char *password, struct ty_err *err)
{
    int up = 0, lo = 0, num = 0, sym = 0;
    size_t n = strlen(password);

    for (const char *c = password; *c; c++) {
        int ch = (unsigned char)*c;
        if (ch < 0x20 || ch == 0x7f)
            return ty_err_set(err, TY_EPWPOLICY, "Password",
                              "Password should not contain control characters");
        up |= isupper(ch) != 0;
        lo |= islower(ch) != 0;
        num |= isdigit(ch) != 0;
        sym |= login_is_symbol(ch);
    }
    if (n > PASSWORD_PW_MAX)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have at most %d characters", PASSWORD_PW_MAX);
    if ((int)n < p->min_length)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have a minimum length of %d", p->min_length);
    if (!p->custom) {
        if (up + lo + num + sym < 3)
            return ty_err_set(err, TY_EPWPOLICY, "Password",
                              "Password should have at least three of these: uppercase letters, "
                              "lowercase letters, numbers and symbols");
        return 0;
    }
    if (p->req_upper && !up)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have at least one uppercase letter");
    if (p->req_lower && !lo)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have at least one lowercase letter");
    if (p->req_numbers && !num)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have at least one number");
    if (p->req_symbols && !sym)
        return ty_err_set(err, TY_EPWPOLICY, "Password",
                          "Password should have at least one symbol");
    return 0;
}

/* ---- the KDF ---- */

static int login_unhex(const char *in, size_t len, unsigned char *out, size_t n)
{
    if (len != 2 * n)
        return -1;
    for (size_t i = 0; i < n; i++) {
        int v = 0;
        for (int k = 0; k < 2; k++) {
            int c = in[2 * i + k];
            v <<= 4;
            if (c >= '0' && c <= '9')
                v |= c - '0';
            else if (c >= 'a' && c <= 'f')
                v |= c - 'a' + 10;
            else
                return -1;
        }
        out[i] = (unsigned char)v;
    }
    return 0;
}

static int login_kdf(const char *password, const unsigned char *salt, int iter,
                     unsigned char key[PASSWORD_KEY])
{
    return PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, PASSWORD_SALT, iter,
                             EVP_sha256(), PASSWORD_KEY, key) == 1
               ? 0
               : -1;
}

int password_hash(const char *password, int iterations, char *out, size_t n, struct ty_err *err)
{
    unsigned char salt[PASSWORD_SALT], key[PASSWORD_KEY];
    char salth[2 * PASSWORD_SALT + 1], keyh[2 * PASSWORD_KEY + 1];

    if (!password || strlen(password) > PASSWORD_PW_MAX || n < PASSWORD_HASH_MAX || iterations < 1)
        return ty_err_set(err, TY_EINVAL, "Password", "Password cannot be hashed");
    if (RAND_bytes(salt, sizeof(salt)) != 1 || login_kdf(password, salt, iterations, key) != 0)
        return ty_err_set(err, TY_EINTERNAL, NULL, "cannot hash the password");
    ty_hex_encode(salt, sizeof(salt), salth);
    ty_hex_encode(key, sizeof(key), keyh);
    OPENSSL_cleanse(key, sizeof(key));
    snprintf(out, n, "%s$%d$%s$%s", PASSWORD_SCHEME, iterations, salth, keyh);
    return 0;
}

int password_verify(const char *password, const char *encoded)
{
    unsigned char salt[PASSWORD_SALT], want[PASSWORD_KEY], got[PASSWORD_KEY];
    const char *p, *d1, *d2;
    char *end;
    long iter;
    int ok;

    if (!password || !encoded || strlen(password) > PASSWORD_PW_MAX)
        return 0;
    p = encoded;
    if (strncmp(p, PASSWORD_SCHEME "$", sizeof(PASSWORD_SCHEME)) != 0)
        return 0;
    p += sizeof(PASSWORD_SCHEME);
    iter = strtol(p, &end, 10);
    if (end == p || *end != '$' || iter < 1 || iter > 100000000)
        return 0;
    d1 = end + 1;
    d2 = strchr(d1, '$');
    if (!d2 || login_unhex(d1, (size_t)(d2 - d1), salt, sizeof(salt)) != 0 ||
        login_unhex(d2 + 1, strlen(d2 + 1), want, sizeof(want)) != 0)
        return 0;
    if (login_kdf(password, salt, (int)iter, got) != 0)
        return 0;
    ok = CRYPTO_memcmp(got, want, sizeof(got)) == 0;
    OPENSSL_cleanse(got, sizeof(got));
    return ok;
}

static int login_no_profile(struct ty_err *err, const char *name)
{
    return ty_err_set(err, TY_ENOTFOUND, "UserName",
                      "Login Profile for User %.64s cannot be found.", name);
}

/* ---- the policy in the store ---- */

int password_policy_get(struct store *s, struct password_policy *p, struct ty_err *err)
{
    char *text;
    json_t *doc;
    int rc = store_login_policy_get(s, &text, err);
    if (rc)
        return rc;
    password_policy_default(p);
    if (!text)
        return 0;
    doc = json_loads(text, 0, NULL);
    free(text);
    if (json_is_object(doc)) {
        json_t *v;
        p->custom = 1;
        if (json_is_integer(v = json_object_get(doc, "MinimumPasswordLength")))
            p->min_length = (int)json_integer_value(v);
        p->req_symbols = json_is_true(json_object_get(doc, "RequireSymbols"));
        p->req_numbers = json_is_true(json_object_get(doc, "RequireNumbers"));
        p->req_upper = json_is_true(json_object_get(doc, "RequireUppercaseCharacters"));
        p->req_lower = json_is_true(json_object_get(doc, "RequireLowercaseCharacters"));
        p->allow_change = json_is_true(json_object_get(doc, "AllowUsersToChangePassword"));
    }
    json_decref(doc);
    return 0;
}

int password_policy_put(struct store *s, const struct password_policy *p, struct ty_err *err)
{
    json_t *doc =
        json_pack("{s:i,s:b,s:b,s:b,s:b,s:b}", "MinimumPasswordLength", p->min_length,
                  "RequireSymbols", p->req_symbols, "RequireNumbers", p->req_numbers,
                  "RequireUppercaseCharacters", p->req_upper, "RequireLowercaseCharacters",
                  p->req_lower, "AllowUsersToChangePassword", p->allow_change);
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    int rc;
    json_decref(doc);
    if (!text)
        return ty_err_set(err, TY_ENOMEM, NULL, "out of memory");
    rc = store_login_policy_set(s, text, err);
    free(text);
    return rc;
}

int password_policy_delete(struct store *s, struct ty_err *err)
{
    int rc = store_login_policy_delete(s, err);
    if (rc == 0)
        return ty_err_set(err, TY_ENOTFOUND, NULL,
                          "The Password Policy with domain name %s cannot be found.", "account");
    return rc < 0 ? rc : 0;
}

/* ---- login profiles ---- */

int password_put(struct store *s, const char *name, const char *uid, const char *password,
                 int replace, int reset, double now, struct ty_err *err)
{
    char hash[PASSWORD_HASH_MAX] = "", olduid[64];
    struct password_policy pol;
    double oc = 0;
    int oreset = 0, rc;

    rc = store_login_read(s, name, NULL, 0, olduid, sizeof(olduid), &oc, &oreset, err);
    if (rc == -TY_EINVAL)
        return ty_err_set(err, TY_ENOTFOUND, "UserName",
                          "The user with name %.64s cannot be found.", name);
    if (rc != 0 && rc != -TY_ENOTFOUND)
        return rc;
    if (rc == 0 && strcmp(olduid, uid) != 0)
        rc = -TY_ENOTFOUND; /* left by an earlier user of that name */
    if (!replace && rc == 0)
        return ty_err_set(err, TY_EINUSE, "UserName",
                          "Login Profile for user %.64s already exists.", name);
    if (replace && rc != 0)
        return login_no_profile(err, name);
    if (password) {
        if ((rc = password_policy_get(s, &pol, err)) != 0)
            return rc;
        if ((rc = password_policy_check(&pol, password, err)) != 0)
            return rc;
        if ((rc = password_hash(password, PASSWORD_ITERATIONS, hash, sizeof(hash), err)) != 0)
            return rc;
    }
    rc = store_login_write(s, name, hash[0] ? hash : NULL, uid, replace ? oc : now,
                           reset < 0 ? oreset : reset != 0, err);
    OPENSSL_cleanse(hash, sizeof(hash));
    return rc;
}

int password_get(struct store *s, const char *name, const char *uid, double *created, int *reset,
                 struct ty_err *err)
{
    char olduid[64];
    double c = 0;
    int rs = 0, rc;
    rc = store_login_read(s, name, NULL, 0, olduid, sizeof(olduid), &c, &rs, err);
    if (rc == -TY_EINVAL || rc == -TY_ENOTFOUND || (rc == 0 && strcmp(olduid, uid) != 0))
        return login_no_profile(err, name);
    if (rc)
        return rc;
    *created = c;
    *reset = rs;
    return 0;
}

int password_delete(struct store *s, const char *name, struct ty_err *err)
{
    int rc = store_login_delete(s, name, err);
    if (rc == 0 || rc == -TY_EINVAL)
        return login_no_profile(err, name);
    return rc < 0 ? rc : 0;
}

static int login_denied(struct ty_err *err)
{
    return ty_err_set(err, TY_EDENIED, NULL,
                      "Your authentication information is incorrect. Please try again.");
}

/* How long a budget waits after its n-th failure: none for the first free - 1, then 1 s,
   doubling up to PASSWORD_WAIT_MAX_S. */
static long long login_wait_ms(long long n, long long free)
{
    long long ms = 1000;
    if (n < free)
        return 0;
    for (long long i = free; i < n && ms < PASSWORD_WAIT_MAX_S * 1000; i++)
        ms *= 2;
    return ms < PASSWORD_WAIT_MAX_S * 1000 ? ms : PASSWORD_WAIT_MAX_S * 1000;
}

void password_source(const char *client, char *out, size_t n)
{
    struct in6_addr a6;
    struct in_addr a4;
    char buf[INET6_ADDRSTRLEN];

    if (client && inet_pton(AF_INET, client, &a4) == 1) {
        snprintf(out, n, "%s", client);
        return;
    }
    if (!client || inet_pton(AF_INET6, client, &a6) != 1) {
        snprintf(out, n, "-");
        return;
    }
    if (IN6_IS_ADDR_V4MAPPED(&a6)) {
        memcpy(&a4, &a6.s6_addr[12], 4);
        snprintf(out, n, "%s", inet_ntop(AF_INET, &a4, buf, sizeof(buf)) ? buf : "-");
        return;
    }
    memset(&a6.s6_addr[8], 0, 8); /* one budget per /64: a host has them all */
    snprintf(out, n, "%s/64", inet_ntop(AF_INET6, &a6, buf, sizeof(buf)) ? buf : "-");
}

/* The device token's MAC of lname and id (32 hex digits) under key (the user's password
   hash). 0 or -1. */
static int login_device_mac(const char *key, const char *lname, const char *id, char mac[33])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int ml = 0;
    char msg[200];

    snprintf(msg, sizeof(msg), "trainyard-device:%s:%s", lname, id);
    if (!HMAC(EVP_sha256(), key, (int)strlen(key), (const unsigned char *)msg, strlen(msg), md,
              &ml) ||
        ml < 16)
        return -1;
    ty_hex_encode(md, 16, mac);
    return 0;
}

/* A device token: "<id>.<mac>" (32 + 32 hex digits). When token is one of lname's under key,
   OUT: id (33 bytes) and 1; else 0. */
static int login_device_known(const char *token, const char *key, const char *lname, char id[33])
{
    char mac[33];
    const char *dot = token ? strchr(token, '.') : NULL;

    if (!dot || dot - token != 32 || strlen(dot + 1) != 32 || !key || !*key)
        return 0;
    memcpy(id, token, 32);
    id[32] = '\0';
    if (strspn(id, "0123456789abcdef") != 32 || login_device_mac(key, lname, id, mac) != 0)
        return 0;
    return CRYPTO_memcmp(mac, dot + 1, 32) == 0;
}

/* The longest wait of source (and, with all, of every source) for name. 0 or -TY_E*. */
static int login_waits(struct store *s, const char *name, const char *source, int all,
                       long long *wait_ms, struct ty_err *err)
{
    long long w = 0;
    int rc = store_login_wait(s, name, source, wait_ms, err);
    if (rc == 0 && all && (rc = store_login_wait(s, name, PASSWORD_USER_SOURCE, &w, err)) == 0 &&
        w > *wait_ms)
        *wait_ms = w;
    return rc;
}

int password_attempt(struct store *s, const char *name, const char *uid, const char *password,
                     struct password_try *t, struct ty_err *err)
{
    char hash[PASSWORD_HASH_MAX], olduid[64], lname[STORE_IAM_NAME_MAX + 1], id[33];
    char devsrc[40];
    const char *src = t->source;
    double created = 0;
    int rs = 0, rc, ok, known = 0;
    long long n;
    size_t i;

    t->wait_ms = 0;
    t->device_out[0] = '\0';
    for (i = 0; name[i] && i < sizeof(lname) - 1; i++)
        lname[i] = (char)tolower((unsigned char)name[i]);
    lname[i] = '\0';
    hash[0] = '\0';
    rc = store_login_read(s, name, hash, sizeof(hash), olduid, sizeof(olduid), &created, &rs, err);
    if (rc == -TY_EINVAL) {
        password_verify(password, LOGIN_DUMMY);
        return login_denied(err);
    }
    if (rc != 0 && rc != -TY_ENOTFOUND)
        return rc;
    if (rc == 0 && uid[0] && strcmp(olduid, uid) == 0 && t->device && *t->device &&
        login_device_known(t->device, hash, lname, id)) {
        known = 1; /* this browser signed in as name before: its own budget only */
        snprintf(devsrc, sizeof(devsrc), "dev:%s", id);
        src = devsrc;
    }
    if ((rc = login_waits(s, name, src, !known, &t->wait_ms, err)) != 0) {
        OPENSSL_cleanse(hash, sizeof(hash));
        return rc;
    }
    if (t->wait_ms > 0) { /* this source waits; the account itself is never locked */
        OPENSSL_cleanse(hash, sizeof(hash));
        return ty_err_set(err, TY_ETHROTTLE, NULL,
                          "Too many failed sign-in attempts. Try again in %lld seconds.",
                          (t->wait_ms + 999) / 1000);
    }
    if (rc == 0 && hash[0] && uid[0] && strcmp(olduid, uid) == 0) {
        ok = password_verify(password, hash);
    } else {
        password_verify(password, LOGIN_DUMMY);
        ok = 0;
    }
    if (ok) {
        char mac[33];
        store_login_fails_clear(s, name, src);
        t->reset = rs;
        if (!known && ty_rand_hex(id, 32) != 0)
            id[0] = '\0';
        if (id[0] && login_device_mac(hash, lname, id, mac) == 0)
            snprintf(t->device_out, sizeof(t->device_out), "%s.%s", id, mac);
        OPENSSL_cleanse(hash, sizeof(hash));
        return 0;
    }
    OPENSSL_cleanse(hash, sizeof(hash));
    /* each window restarts at its failure; from its free count on, the source waits */
    n = store_login_fail(s, name, src, PASSWORD_WINDOW_S);
    store_login_hold(s, name, src, login_wait_ms(n, PASSWORD_FREE_FAILS));
    if (!known) {
        n = store_login_fail(s, name, PASSWORD_USER_SOURCE, PASSWORD_WINDOW_S);
        store_login_hold(s, name, PASSWORD_USER_SOURCE, login_wait_ms(n, PASSWORD_USER_FREE_FAILS));
    }
    return login_denied(err);
}

int password_change(struct store *s, const char *name, const char *uid, const char *old_password,
                    const char *new_password, struct ty_err *err)
{
    struct password_try t;
    double created;
    int reset, rc;

    if ((rc = password_get(s, name, uid, &created, &reset, err)) != 0)
        return rc;
    memset(&t, 0, sizeof(t));
    t.source = PASSWORD_API_SOURCE;
    if ((rc = password_attempt(s, name, uid, old_password, &t, err)) != 0) {
        if (rc == -TY_EDENIED)
            return ty_err_set(err, TY_EDENIED, "OldPassword",
                              "The old password you entered is incorrect.");
        return rc;
    }
    if (strcmp(old_password, new_password) == 0)
        return ty_err_set(err, TY_EPWPOLICY, "NewPassword",
                          "Password should not be the same as the old password");
    return password_put(s, name, uid, new_password, 1, 0, (double)time(NULL), err);
}

int password_reset_required(struct store *s, const char *name, const char *uid)
{
    struct ty_err err;
    double created;
    int reset = 0;
    ty_err_clear(&err);
    if (password_get(s, name, uid, &created, &reset, &err) != 0)
        return 0;
    return reset != 0;
}

int password_bootstrap(struct store *s, const char *path, struct ty_err *err)
{
    char pw[PASSWORD_PW_MAX + 4];
    struct store_iam_user u;
    double created;
    int reset, rc;
    size_t n;
    FILE *f;

    if ((rc = store_iam_user_get(s, "admin", &u, NULL, err)) != 0)
        return rc;
    if (password_get(s, u.name, u.id, &created, &reset, err) == 0)
        return 0;
    ty_err_clear(err);
    f = fopen(path, "r");
    if (!f)
        return ty_err_set(err, TY_EIO, "admin-password-file", "cannot read '%s'", path);
    if (!fgets(pw, sizeof(pw), f))
        pw[0] = '\0';
    fclose(f);
    n = strcspn(pw, "\r\n");
    pw[n] = '\0';
    if (n == 0) {
        rc = ty_err_set(err, TY_EINVAL, "admin-password-file", "'%s' holds no password", path);
    } else {
        rc = password_put(s, u.name, u.id, pw, 0, 0, (double)time(NULL), err);
    }
    OPENSSL_cleanse(pw, sizeof(pw));
    return rc;
}
