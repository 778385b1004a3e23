/*
 * iamapi_boundary.c - permissions boundaries, refused: a boundary names a managed policy, and
 * trainyard keeps inline policies only, so no boundary can be in force here. CreateUser and
 * CreateRole with PermissionsBoundary, and Put{User,Role}PermissionsBoundary, answer what IAM
 * answers for a boundary policy that does not exist (NoSuchEntity, "Scope ARN: <arn> does not
 * exist or is not attachable."), after the caller's authorisation and the target's existence,
 * and store nothing; an admin never believes a limit is in force that is not.
 * Delete{User,Role}PermissionsBoundary find none to remove and answer as IAM does then.
 *
 * Does not own the storage (store_iam.h) nor the protocol (iamapi.c).
 */
#include "iamapi_int.h"

#include "store_iam.h"

#include <string.h>

int iamapi__boundary_refuse(struct iamapi__ctx *x, struct ty_err *err)
{
    const char *b = iamapi__s(x->in, "PermissionsBoundary");

    if (!b)
        return 0;
    if (strncmp(b, "arn:", 4) != 0)
        return ty_err_set(err, TY_EINVAL, "PermissionsBoundary", "ARN %.2048s is not valid.", b);
    return ty_err_set(err, TY_ENOTFOUND, "PermissionsBoundary",
                      "Scope ARN: %.2048s does not exist or is not attachable.", b);
}

/* 0 when the action's UserName or RoleName exists, else IAM's NoSuchEntity. */
static int iamapi_boundary_target(struct iamapi__ctx *x, int role, struct ty_err *err)
{
    const char *name = iamapi__s(x->in, role ? "RoleName" : "UserName");
    int rc;

    if (role) {
        struct store_iam_role r;
        rc = store_iam_role_get(x->c->store, name, &r, NULL, NULL, err);
        if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
            return ty_err_set(err, TY_ENOTFOUND, "RoleName",
                              "The role with name %.64s cannot be found.", name);
        return rc;
    }
    {
        struct store_iam_user u;
        rc = store_iam_user_get(x->c->store, name, &u, NULL, err);
        if (rc == -TY_ENOTFOUND || rc == -TY_EINVAL)
            return iamapi__no_user(err, name);
        return rc;
    }
}

int iamapi__put_user_boundary(struct iamapi__ctx *x, struct ty_err *err)
{
    int rc = iamapi_boundary_target(x, 0, err);
    return rc ? rc : iamapi__boundary_refuse(x, err);
}

int iamapi__put_role_boundary(struct iamapi__ctx *x, struct ty_err *err)
{
    int rc = iamapi_boundary_target(x, 1, err);
    return rc ? rc : iamapi__boundary_refuse(x, err);
}

int iamapi__delete_user_boundary(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi_boundary_target(x, 0, err);
}

int iamapi__delete_role_boundary(struct iamapi__ctx *x, struct ty_err *err)
{
    return iamapi_boundary_target(x, 1, err);
}
