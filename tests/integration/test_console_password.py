"""Console passwords through the IAM API (boto3): PasswordPolicyViolation for a weak password on
CreateLoginProfile, UpdateLoginProfile and ChangePassword (as IAM answers), and ChangePassword
itself: who may call it (iam:ChangePassword in the caller's policies, the account policy's
AllowUsersToChangePassword, a pending PasswordResetRequired), a wrong old password, a caller
that is not an IAM user, and the new password being the one the console accepts.

One private server without agents; users are named con-pw-*.
"""
import os
import urllib.parse
import urllib.request

import botocore.exceptions
import pytest

import tyhelpers as H


@pytest.fixture(scope="module")
def srv(workdir):
    if not os.access(H.SERVER_BIN, os.X_OK):
        pytest.fail(f"{H.SERVER_BIN} is missing: build trainyard first")
    s = H.Server(os.path.join(workdir, "console-pw"), agents=0)
    s.start()
    yield s
    rc = s.stop(timeout=60)
    assert rc == 0, f"server exited with {rc} on SIGTERM:\n{s.proc.tail()}"


def err(exc_info):
    e = exc_info.value
    assert isinstance(e, botocore.exceptions.ClientError), e
    return (e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"],
            e.response["Error"]["Message"])


def user(admin, name, password=None, policy=None, reset=False):
    admin.create_user(UserName=name)
    k = admin.create_access_key(UserName=name)["AccessKey"]
    if password:
        admin.create_login_profile(UserName=name, Password=password, PasswordResetRequired=reset)
    if policy:
        import json
        admin.put_user_policy(UserName=name, PolicyName="p", PolicyDocument=json.dumps(policy))
    return (k["AccessKeyId"], k["SecretAccessKey"])


def console_login(srv, name, password):
    """Where /console/login sends name after accepting the password (a 303 with the session
    cookie), or None when it refuses it."""
    body = urllib.parse.urlencode({"account": "000000000000", "username": name,
                                   "password": password}).encode()

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *a, **k):
            return None
    opener = urllib.request.build_opener(NoRedirect)
    try:
        r = opener.open(urllib.request.Request(srv.url + "/console/login", data=body), timeout=30)
        status, loc = r.status, r.headers.get("Location")
    except urllib.error.HTTPError as e:
        status, loc = e.code, e.headers.get("Location")
    return loc if status == 303 else None


def test_weak_passwords_are_password_policy_violations(srv):
    admin = srv.client("iam")
    user(admin, "con-pw-weak")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        admin.create_login_profile(UserName="con-pw-weak", Password="short")
    code, status, msg = err(e)
    assert (code, status) == ("PasswordPolicyViolation", 400)
    assert msg == "Password should have a minimum length of 8"
    admin.create_login_profile(UserName="con-pw-weak", Password="Good-Passw0rd")
    with pytest.raises(botocore.exceptions.ClientError) as e:
        admin.update_login_profile(UserName="con-pw-weak", Password="alllowercase")
    code, status, msg = err(e)
    assert code == "PasswordPolicyViolation"
    assert "at least three of" in msg


def test_change_password(srv):
    admin = srv.client("iam")
    allow = {"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Action": "iam:ChangePassword",
         "Resource": "arn:aws:iam::000000000000:user/${aws:username}"}]}
    keys = user(admin, "con-pw-a", "First-Passw0rd", policy=allow)
    me = srv.client("iam", keys=keys)
    # a weak new password: the account policy's words
    with pytest.raises(botocore.exceptions.ClientError) as e:
        me.change_password(OldPassword="First-Passw0rd", NewPassword="weak")
    assert err(e)[:2] == ("PasswordPolicyViolation", 400)
    # a wrong old password changes nothing
    with pytest.raises(botocore.exceptions.ClientError) as e:
        me.change_password(OldPassword="Wrong-Passw0rd", NewPassword="Second-Passw0rd")
    code, status, msg = err(e)
    assert (code, status) == ("AccessDenied", 403)
    assert "old password" in msg
    me.change_password(OldPassword="First-Passw0rd", NewPassword="Second-Passw0rd")
    assert console_login(srv, "con-pw-a", "Second-Passw0rd") == "/console/home"
    assert console_login(srv, "con-pw-a", "First-Passw0rd") is None

    # without iam:ChangePassword: allowed by IAM's default policy, refused by a custom one
    # without AllowUsersToChangePassword, allowed again when it says so
    keys_b = user(admin, "con-pw-b", "First-Passw0rd")
    b = srv.client("iam", keys=keys_b)
    admin.update_account_password_policy(MinimumPasswordLength=10)
    try:
        with pytest.raises(botocore.exceptions.ClientError) as e:
            b.change_password(OldPassword="First-Passw0rd", NewPassword="Second-Passw0rd")
        code, status, msg = err(e)
        assert (code, status) == ("AccessDenied", 403)
        assert "is not authorized to perform: iam:ChangePassword" in msg
        admin.update_account_password_policy(MinimumPasswordLength=10,
                                             AllowUsersToChangePassword=True)
        with pytest.raises(botocore.exceptions.ClientError) as e:
            b.change_password(OldPassword="First-Passw0rd", NewPassword="Sh0rt-pw")
        code, _, msg = err(e)
        assert code == "PasswordPolicyViolation" and "minimum length of 10" in msg
        b.change_password(OldPassword="First-Passw0rd", NewPassword="Second-Passw0rd")
    finally:
        admin.delete_account_password_policy()

    # a pending PasswordResetRequired allows the change (even under a policy without
    # AllowUsersToChangePassword), which clears it
    keys_c = user(admin, "con-pw-c", "First-Passw0rd", reset=True)
    c = srv.client("iam", keys=keys_c)
    assert admin.get_login_profile(UserName="con-pw-c")["LoginProfile"]["PasswordResetRequired"]
    admin.update_account_password_policy(MinimumPasswordLength=8)
    try:
        # the console sends him to the change-password page first
        assert console_login(srv, "con-pw-c", "First-Passw0rd") == "/console/password"
        c.change_password(OldPassword="First-Passw0rd", NewPassword="Second-Passw0rd")
        assert console_login(srv, "con-pw-c", "Second-Passw0rd") == "/console/home"
        assert not admin.get_login_profile(
            UserName="con-pw-c")["LoginProfile"]["PasswordResetRequired"]
        with pytest.raises(botocore.exceptions.ClientError) as e:
            c.change_password(OldPassword="Second-Passw0rd", NewPassword="Third-Passw0rd")
        assert err(e)[0] == "AccessDenied"
    finally:
        admin.delete_account_password_policy()

    # a user without a login profile
    keys_d = user(admin, "con-pw-d", policy=allow)
    with pytest.raises(botocore.exceptions.ClientError) as e:
        srv.client("iam", keys=keys_d).change_password(OldPassword="x", NewPassword="y")
    assert err(e)[:2] == ("NoSuchEntity", 404)
