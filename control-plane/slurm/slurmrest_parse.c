/*
 * slurmrest_parse.c - the slurmrestd client's pure parts (slurmrest_int.h): minting the JWT,
 * reading errors, exit statuses and jobs out of the answers. Owns nothing between calls.
 */
#include "slurmrest.h"
#include "slurmrest_int.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <string.h>

/* base64url without padding (RFC 7515) of in[0..n) at out (room for 4 * (n + 2) / 3 + 1). */
static size_t b64url(const unsigned char *in, size_t n, char *out)
{
    int len = EVP_EncodeBlock((unsigned char *)out, in, (int)n);
    while (len > 0 && out[len - 1] == '=')
        len--;
    out[len] = '\0';
    for (int i = 0; i < len; i++) {
        if (out[i] == '+')
            out[i] = '-';
        else if (out[i] == '/')
            out[i] = '_';
    }
    return (size_t)len;
}

int slurmrest_jwt_mint(const unsigned char *key, size_t keylen, const char *user, int64_t now,
                       int life_s, char *out, size_t n)
{
    static const char head[] = "{\"alg\":\"HS256\",\"typ\":\"JWT\"}";
    char claims[256], signing[SLURMREST_JWT_MAX];
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int maclen = 0;
    size_t len;
    int c;

    if (!user || strlen(user) > 64 ||
        strspn(user, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRST"
                     "UVWXYZ0123456789._-") != strlen(user) ||
        n < SLURMREST_JWT_MAX)
        return -1;
    c = snprintf(claims, sizeof(claims), "{\"exp\":%lld,\"iat\":%lld,\"sun\":\"%s\"}",
                 (long long)(now + life_s), (long long)now, user);
    if (c < 0 || (size_t)c >= sizeof(claims))
        return -1;
    len = b64url((const unsigned char *)head, sizeof(head) - 1, signing);
    signing[len++] = '.';
    len += b64url((const unsigned char *)claims, (size_t)c, signing + len);
    if (!HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)signing, len, mac, &maclen))
        return -1;
    memcpy(out, signing, len);
    out[len++] = '.';
    b64url(mac, maclen, out + len);
    return 0;
}

int slurmrest_answer_error(json_t *answer, char *words, size_t n)
{
    json_t *e = json_array_get(json_object_get(answer, "errors"), 0);
    json_t *num = json_object_get(e, "error_code");
    const char *what = json_string_value(json_object_get(e, "error"));
    const char *desc = json_string_value(json_object_get(e, "description"));

    if (n)
        words[0] = '\0';
    if (!json_is_object(e))
        return 0;
    if (!json_is_integer(num))
        num = json_object_get(e, "error_number");
    if (!what || !what[0])
        what = desc && desc[0] ? desc : NULL;
    if (what && desc && desc[0] && strcmp(what, desc) != 0)
        snprintf(words, n, "%s: %s", what, desc);
    else if (what)
        snprintf(words, n, "%s", what);
    if (json_is_integer(num) && json_integer_value(num) != 0)
        return (int)json_integer_value(num);
    return what ? -1 : 0; /* an error without a number (words may be too small to tell) */
}

void slurmrest_wait_status(long raw, int *code, int *sig)
{
    if ((raw & 0x7f) == 0) { /* exited */
        *code = (int)((raw >> 8) & 0xff);
        *sig = 0;
    } else {
        *sig = (int)(raw & 0x7f);
        *code = 128 + *sig;
    }
}

static void copy_str(json_t *j, const char *key, char *out, size_t n)
{
    const char *v = json_string_value(json_object_get(j, key));
    snprintf(out, n, "%s", v ? v : "");
}

static int64_t get_int(json_t *j, const char *key)
{
    json_t *v = json_object_get(j, key);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

int slurmrest_job_parse(json_t *j, struct slurmrest_job *out, struct ty_err *err)
{
    memset(out, 0, sizeof(*out));
    if (!json_is_object(j) || !json_is_integer(json_object_get(j, "job_id")) ||
        !json_is_string(json_object_get(j, "job_state")))
        return ty_err_set(err, TY_EENGINE, NULL, "slurmrestd: a job without job_id or job_state");
    out->id = (long)get_int(j, "job_id");
    copy_str(j, "name", out->name, sizeof(out->name));
    copy_str(j, "comment", out->comment, sizeof(out->comment));
    copy_str(j, "job_state", out->state, sizeof(out->state));
    copy_str(j, "state_reason", out->reason, sizeof(out->reason));
    copy_str(j, "state_description", out->description, sizeof(out->description));
    copy_str(j, "nodes", out->nodes, sizeof(out->nodes));
    copy_str(j, "batch_host", out->batch_host, sizeof(out->batch_host));
    out->node_count = (int)get_int(j, "node_count");
    out->restart_cnt = (int)get_int(j, "restart_cnt");
    slurmrest_wait_status((long)get_int(j, "exit_code"), &out->exit_code, &out->exit_signal);
    out->submit_time = get_int(j, "submit_time");
    out->start_time = get_int(j, "start_time");
    out->end_time = get_int(j, "end_time");
    /* while pending, both are estimates; while running, end_time is the time limit's end */
    if (strcmp(out->state, "PENDING") == 0)
        out->start_time = 0;
    if (strcmp(out->state, "PENDING") == 0 || strcmp(out->state, "RUNNING") == 0 ||
        strcmp(out->state, "SUSPENDED") == 0)
        out->end_time = 0;
    return 0;
}
