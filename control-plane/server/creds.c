/*
 * creds.c - admin principal bootstrap, and the default execution role the admin owns.
 */
#include "creds.h"

#include "store_iam.h"
#include "ty_log.h"
#include "ty_rand.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Reads aws_access_key_id / aws_secret_access_key of the [default] profile. */
static int creds_read(const char *path, char *akid, size_t an, char *secret, size_t sn)
{
    char line[512];
    int in_default = 0, got = 0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f)) {
        char *k = line, *v, *e;
        line[strcspn(line, "\r\n")] = '\0';
        if (line[0] == '[') {
            in_default = strcmp(line, "[default]") == 0;
            continue;
        }
        v = strchr(line, '=');
        if (!in_default || !v)
            continue;
        *v++ = '\0';
        while (*v == ' ')
            v++;
        e = k + strlen(k);
        while (e > k && e[-1] == ' ')
            *--e = '\0';
        if (strcmp(k, "aws_access_key_id") == 0 && snprintf(akid, an, "%s", v) > 0)
            got |= 1;
        else if (strcmp(k, "aws_secret_access_key") == 0 && snprintf(secret, sn, "%s", v) > 0)
            got |= 2;
    }
    fclose(f);
    return got == 3 ? 0 : -1;
}

static int creds_write(const char *path, const char *akid, const char *secret, struct ty_err *err)
{
    char tmp[4200];
    int fd;
    FILE *f;
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return ty_err_set(err, TY_EIO, "data-dir", "cannot write %s: %s", tmp, strerror(errno));
    f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        return ty_err_set(err, TY_EIO, "data-dir", "cannot write %s", tmp);
    }
    fprintf(f, "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n", akid, secret);
    fflush(f);
    fsync(fd);
    fclose(f);
    chmod(tmp, 0600);
    if (rename(tmp, path) != 0)
        return ty_err_set(err, TY_EIO, "data-dir", "cannot rename %s: %s", tmp, strerror(errno));
    return 0;
}

int creds_bootstrap(struct store *s, const char *data_dir, const char *account_id,
                    struct ty_err *err)
{
    char path[4096], akid[129], secret[129], arn[256];
    const char *env_id = getenv("TRAINYARD_ADMIN_ACCESS_KEY_ID");
    const char *env_secret = getenv("TRAINYARD_ADMIN_SECRET_ACCESS_KEY");
    int fresh = 0, rc;

    snprintf(path, sizeof(path), "%s/credentials", data_dir);
    snprintf(arn, sizeof(arn), "arn:aws:iam::%s:user/admin", account_id);
    if (env_id && *env_id && env_secret && *env_secret) {
        if (strlen(env_id) >= sizeof(akid) || strlen(env_secret) >= sizeof(secret))
            return ty_err_set(err, TY_EINVAL, "TRAINYARD_ADMIN_ACCESS_KEY_ID",
                              "admin keys are too long");
        snprintf(akid, sizeof(akid), "%s", env_id);
        snprintf(secret, sizeof(secret), "%s", env_secret);
    } else if (creds_read(path, akid, sizeof(akid), secret, sizeof(secret)) != 0) {
        memcpy(akid, "AKIA", 4);
        if (ty_rand_string(akid + 4, 16, "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") != 0 ||
            ty_rand_string(secret, 40,
                           "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/") != 0)
            return ty_err_set(err, TY_EINTERNAL, NULL, "cannot generate keys");
        fresh = 1;
    }
    rc = store_principal_put(s, akid, secret, arn, "admin", err);
    if (rc)
        return rc;
    /* the admin is an IAM user with an all-allowing inline policy (store_iam.c) */
    rc = store_iam_bootstrap_admin(s, account_id, akid, (double)time(NULL), err);
    if (rc)
        return rc;
    /* the default execution role arn:aws:iam::<account>:role/trainyard (store_iam.h), also on
       servers whose Redis predates roles */
    rc = store_iam_bootstrap_role(s, account_id, (double)time(NULL), err);
    if (rc)
        return rc;
    rc = creds_write(path, akid, secret, err);
    if (rc)
        return rc;
    if (fresh) {
        printf("trainyard admin credentials (shown once; also in %s):\n"
               "  aws_access_key_id = %s\n  aws_secret_access_key = %s\n",
               path, akid, secret);
        fflush(stdout);
    }
    ty_log(TY_LOG_INFO, "creds.ready", "principal=%s access_key=%s file=%s", arn, akid, path);
    return 0;
}
