/*
 * session_tool.c - ty-session-tool, a test-only command line over session.h, so that the
 * integration tests grant and revoke container tokens in a live server's Redis exactly as the
 * agent does (the same functions), without a training job:
 *   ty-session-tool grant  REDIS_URL JOB ROLE_ARN TTL_S [POLICY]   prints the container token
 *                                                  (POLICY: the session policy, JSON text)
 *   ty-session-tool revoke REDIS_URL JOB
 * Exit status 0, 1 on an error (printed on stderr), 2 on bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session.h"
#include "store.h"

int main(int argc, char **argv)
{
    struct ty_err err;
    struct store *s;
    char tok[SESSION_TOKEN_LEN];
    int rc;

    ty_err_clear(&err);
    if (argc < 3 || (strcmp(argv[1], "grant") == 0 && argc != 6 && argc != 7) ||
        (strcmp(argv[1], "revoke") == 0 && argc != 4) ||
        (strcmp(argv[1], "grant") != 0 && strcmp(argv[1], "revoke") != 0)) {
        fprintf(stderr, "usage: ty-session-tool grant REDIS_URL JOB ROLE_ARN TTL_S [POLICY]\n"
                        "       ty-session-tool revoke REDIS_URL JOB\n");
        return 2;
    }
    s = store_open(argv[2], &err);
    if (!s) {
        fprintf(stderr, "ty-session-tool: %s\n", err.msg);
        return 1;
    }
    if (strcmp(argv[1], "grant") == 0) {
        rc = session_job_grant(s, argv[3], argv[4], argc == 7 ? argv[6] : NULL,
                               (int)strtol(argv[5], NULL, 10), tok, sizeof(tok), &err);
        if (rc == 0)
            printf("%s\n", tok);
    } else {
        rc = session_job_revoke(s, argv[3], &err);
    }
    if (rc != 0)
        fprintf(stderr, "ty-session-tool: %s\n", err.msg);
    store_close(s);
    return rc == 0 ? 0 : 1;
}
