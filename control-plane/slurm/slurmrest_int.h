/*
 * slurmrest_int.h - the pure parts of the slurmrestd client (slurmrest_parse.c), private to
 * ty_slurm and its unit tests: the JWT it mints and the errors of an answer.
 */
#ifndef TY_SLURM_SLURMREST_INT_H
#define TY_SLURM_SLURMREST_INT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* The longest token slurmrest_jwt_mint writes (with its NUL). */
#define SLURMREST_JWT_MAX 512

/*
 * Mints the HS256 JWT slurmctld's auth/jwt accepts: header {"alg":"HS256","typ":"JWT"}, claims
 * {"exp": now + life_s, "iat": now, "sun": user}, signed with key[0..keylen). OUT: out (n >=
 * SLURMREST_JWT_MAX). 0, or -1 (user too long, out too small, no HMAC).
 */
int slurmrest_jwt_mint(const unsigned char *key, size_t keylen, const char *user, int64_t now,
                       int life_s, char *out, size_t n);

/*
 * The first error of a slurmrestd answer (its "errors" array; the number is error_code in a
 * submit's answer, error_number elsewhere). OUT: words, "<error>: <description>" or either
 * (truncated to n). Returns the number, 0 when there is none (words then "").
 */
int slurmrest_answer_error(json_t *answer, char *words, size_t n);

/* The exit status of a raw wait status (exit_code in a job): OUT: *code (the status, or 128 +
   the signal) and *sig (the signal, 0 when it exited). */
void slurmrest_wait_status(long raw, int *code, int *sig);

#endif
