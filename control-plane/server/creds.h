/*
 * creds.h - the admin principal: created at first start, kept in Redis, its keys written to
 * <data-dir>/credentials in AWS's shared-credentials format (mode 0600).
 *
 * Owns: key generation (OpenSSL RAND_bytes), the credentials file, and the choice between
 * TRAINYARD_ADMIN_ACCESS_KEY_ID/TRAINYARD_ADMIN_SECRET_ACCESS_KEY, an existing credentials
 * file, and new keys (printed once on stdout).
 */
#ifndef TY_CP_CREDS_H
#define TY_CP_CREDS_H

#include "store.h"
#include "ty_err.h"

/* Makes sure the admin principal exists and its keys are in <data_dir>/credentials.
   0 or a negative error with one clear line. */
int creds_bootstrap(struct store *s, const char *data_dir, const char *account_id,
                    struct ty_err *err);

#endif
