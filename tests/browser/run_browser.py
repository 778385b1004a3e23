"""The console's browser test (ctest label `browser`): starts a trainyard-server with one agent
and an admin password, runs tests/browser/console.mjs (playwright-core from web/node_modules
driving Debian's chromium) and stops the server. Exit 77 (skipped) without chromium,
web/node_modules or a container engine.

Environment: TY_SERVER_BIN, TY_RUNTIME_TAR, TY_DOCKER_HOST (as the integration tests);
TY_SHOTS=<dir> writes a screenshot of every page there (docs/console/ in the repository).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import tyhelpers as H  # noqa: E402

SKIP = 77


def chromium():
    for p in ("/usr/lib/chromium/chromium", "/usr/bin/chromium"):
        if os.access(p, os.X_OK):
            return p
    return None


def main():
    web = os.path.join(ROOT, "web")
    exe = chromium()
    if not exe:
        print("chromium is not installed (apt install chromium): skipped")
        return SKIP
    if not os.path.isdir(os.path.join(web, "node_modules", "playwright-core")):
        print("web/node_modules is missing (scripts/install-deps.sh runs npm ci): skipped")
        return SKIP
    if not H.engine_ping():
        print(f"no container engine answers at {H.DOCKER_HOST}: skipped")
        return SKIP
    work = tempfile.mkdtemp(prefix="ty-browser-", dir="/tmp")
    pwfile = os.path.join(work, "admin-password")
    password = "Admin-" + os.urandom(6).hex() + "-1"
    with open(pwfile, "w") as f:
        f.write(password + "\n")
    os.chmod(pwfile, 0o600)
    srv = H.Server(os.path.join(work, "data"), agents=1,
                   extra=["--stop-grace", "2", "--slots", "4", "--admin-password-file", pwfile])
    srv.start()
    rc = 1
    try:
        akid, secret = srv.credentials()
        env = dict(os.environ, TY_URL=srv.url, TY_ADMIN_PASSWORD=password, TY_WEB=web,
                   TY_ROOT_KEYS=json.dumps([akid, secret]),
                   TY_CHROMIUM=exe, TY_PREFIX="con" + os.urandom(2).hex(),
                   TY_API=json.dumps([sys.executable, os.path.join(HERE, "api.py")]))
        if os.environ.get("TY_SHOTS"):
            os.makedirs(os.environ["TY_SHOTS"], exist_ok=True)
        rc = subprocess.run(["node", os.path.join(HERE, "console.mjs")], env=env,
                            timeout=300).returncode
        if rc != 0:
            print(srv.proc.tail(60))
    finally:
        srv.stop(timeout=60)
        # a job still running when the server stops keeps its containers for a restart to
        # re-attach; none will come for this throwaway data dir
        H.reap_agent_containers(H.agent_ids_of(srv.proc.p.pid, srv.argv()))
        if rc == 0 and not os.environ.get("TY_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    return rc


if __name__ == "__main__":
    sys.exit(main())
