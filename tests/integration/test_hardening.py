"""Hardened job containers (docs/job-sandbox.md): what `docker inspect` of a RUNNING
job shows (capabilities, no-new-privileges, pids/memory/CPU limits, read-only root with tmpfs,
no host namespaces, only the job's own binds, NetworkMode none), and what the job itself finds
from inside: / is read-only while /tmp and /opt/ml are writable, a fork bomb stops at the pids
limit, the capabilities are the documented six, no user namespace can be made (unshare -U
would give every capability back inside it: NET_ADMIN on a network namespace of its own), and no port of the host answers - not a
listener this test binds to 0.0.0.0, not through the job network's gateway (several hosts), not
with EnableNetworkIsolation (no interface but lo). The runtime image's wget works, -T included
(Debian's busybox crashed on it). Job names start with hard-.
"""
import json
import os
import re
import socket
import subprocess
import threading
import time
import urllib.parse

import pytest

import tyhelpers as H

# CHOWN DAC_OVERRIDE FOWNER KILL SETGID SETUID: bits 0 1 3 5 6 7
CAP_EFF = "00000000000000eb"
CAPS = {"CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID", "KILL"}
PIDS_LIMIT = 4096

# One line per check (each line is eval'ed by the job's shell, H.entrypoint). PROBE_IPS and
# PROBE_PORT come from Environment.
CHECKS = r"""
trap 'exit 0' TERM
echo "NET $(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | sort | tr '\n' ',')"
touch /rootfile 2>/dev/null && echo ROOT-RW || echo ROOT-RO
touch /usr/bin/x 2>/dev/null && echo USR-RW || echo USR-RO
echo x > /tmp/t && echo TMP-RW; echo x > /var/tmp/t && echo VARTMP-RW; echo x > /dev/shm/t && echo SHM-RW
echo x > /opt/ml/model/w && echo MODEL-RW; echo x > /opt/ml/output/data/w && echo OUTPUT-RW
grep -E '^(CapEff|NoNewPrivs):' /proc/self/status | tr -s '\t ' ' '
echo "PIDSMAX $(cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/pids/pids.max 2>/dev/null)"
mount -t tmpfs none /mnt 2>/dev/null && echo MOUNT-OK || echo MOUNT-DENIED
mknod /tmp/n c 1 3 2>/dev/null && echo MKNOD-OK || echo MKNOD-DENIED
ip link set lo down 2>/dev/null && echo NETADMIN-OK || echo NETADMIN-DENIED
traceroute -n -m 1 -w 1 127.0.0.1 >/dev/null 2>&1 && echo RAW-OK || echo RAW-DENIED
unshare -U sh -c 'echo USERNS-OK' 2>/dev/null || echo USERNS-DENIED
unshare -U -n sh -c 'ip link set lo down && echo USERNS-NETADMIN-OK' 2>/dev/null; echo USERNS-CHECKED
for s in /run/trainyard-podman.sock /var/run/docker.sock /run/podman/podman.sock; do [ -e $s ] && echo "SOCK $s"; done; echo SOCKS-CHECKED
gw=$(ip -4 -o addr show eth0 2>/dev/null | sed -n 's/.* inet \([0-9.]*\)\.[0-9]*\/.*/\1.1/p'); echo "GW $gw"
for ip in $PROBE_IPS $gw; do nc -w 3 $ip $PROBE_PORT </dev/null >/dev/null 2>&1 && echo "REACH $ip" || echo "NOREACH $ip"; done; echo PROBED
mkdir -p /tmp/www/v1 && echo secret-creds > /tmp/www/v1/c && httpd -p 127.0.0.1:8079 -h /tmp/www && sleep 0.3
echo "WGET $(wget -qO- --header "Authorization: tok" http://127.0.0.1:8079/v1/c)"; x=$(wget -T 5 -qO- http://127.0.0.1:8079/v1/c); r=$?; echo "WGETT $x rc=$r"
(i=0; while [ $i -lt 4300 ]; do sleep 30 & i=$((i+1)); done) 2>/dev/null
n=; for f in /sys/fs/cgroup/pids.current /sys/fs/cgroup/pids/pids.current; do [ -r $f ] && read n < $f; done; echo "BOMB $n"; kill -9 -1; echo BOMB-DONE
"""


def _host_ipv4s():
    """The host's own IPv4 addresses but loopback."""
    out = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True,
                         timeout=10).stdout
    ips = re.findall(r"\binet (\d+\.\d+\.\d+\.\d+)/", out)
    return [ip for ip in ips if not ip.startswith("127.")]


class Listener:
    """A TCP listener on 0.0.0.0:<free port> of the host that counts connections."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("0.0.0.0", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.peers = []
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while True:
            try:
                c, peer = self.sock.accept()
            except OSError:
                return
            self.peers.append(peer)
            c.close()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    # the test itself can reach it: a refusal inside the job means something
    with socket.create_connection(("127.0.0.1", lst.port), timeout=5):
        pass
    H.wait_for(lambda: lst.peers, 5, "the listener's own probe")
    lst.peers.clear()
    yield lst
    lst.close()


def _engine_json(path):
    status, body = H.engine_request("GET", path)
    assert status == 200, (path, status, body[:300])
    return json.loads(body)


def _job_containers(name):
    flt = urllib.parse.quote(json.dumps({"label": [f"trainyard.job={name}"]}))
    return _engine_json(f"/v1.41/containers/json?all=1&filters={flt}")


def _training_containers(name):
    """Inspected training containers of job name (not a helper container of the agent)."""
    out = []
    for c in _job_containers(name):
        if (c.get("Labels") or {}).get("trainyard.sandbox"):
            continue
        out.append(_engine_json(f"/v1.41/containers/{c['Id']}/json"))
    return out


def _log_lines(logs, name, want_streams=1):
    """Every log line of every stream of job name."""
    r = logs.describe_log_streams(logGroupName=H.LOG_GROUP, logStreamNamePrefix=name + "/")
    lines = []
    for s in r["logStreams"]:
        evs, _ = H.log_events(logs, s["logStreamName"])
        lines.append([e["message"].rstrip("\n") for e in evs])
    return lines if len(lines) >= want_streams else None


def _wait_lines(logs, name, marker, hosts=1, timeout=180):
    def ready():
        per = _log_lines(logs, name, hosts)
        if per and all(any(l == marker for l in ls) for ls in per):
            return per
        return None
    return H.wait_for(ready, timeout, f"'{marker}' in every log stream of {name}", interval=1)


def _check_inside(lines, probe_ips, net):
    """The job's own view (one host's log lines)."""
    def has(x):
        return x in lines
    assert has("ROOT-RO") and has("USR-RO"), lines
    for w in ("TMP-RW", "VARTMP-RW", "SHM-RW", "MODEL-RW", "OUTPUT-RW"):
        assert has(w), (w, lines)
    assert has(f"CapEff: {CAP_EFF}") and has("NoNewPrivs: 1"), lines
    assert has(f"PIDSMAX {PIDS_LIMIT}"), lines
    for d in ("MOUNT-DENIED", "MKNOD-DENIED", "NETADMIN-DENIED", "RAW-DENIED", "USERNS-DENIED"):
        assert has(d), (d, lines)
    # no user namespace of its own, so no capability back inside one (seccomp.h)
    assert has("USERNS-CHECKED") and not has("USERNS-OK"), lines
    assert not has("USERNS-NETADMIN-OK"), lines
    assert has("SOCKS-CHECKED") and not [l for l in lines if l.startswith("SOCK ")], lines
    nets = [l for l in lines if l.startswith("NET ")]
    assert nets == [f"NET {net}"], (nets, lines)
    assert has("PROBED"), lines
    for ip in probe_ips:
        assert has(f"NOREACH {ip}"), (ip, lines)
    assert not [l for l in lines if l.startswith("REACH ")], lines
    assert has("WGET secret-creds") and has("WGETT secret-creds rc=0"), lines
    bomb = [l for l in lines if l.startswith("BOMB ") and l != "BOMB-DONE"]
    assert len(bomb) == 1, lines
    n = int(bomb[0].split()[1])
    assert 100 < n <= PIDS_LIMIT, f"fork bomb reached {n} processes (limit {PIDS_LIMIT})"
    assert has("BOMB-DONE"), lines


def _check_inspect(ins, data_dir):
    hc = ins["HostConfig"]
    assert ins["State"]["Running"], ins["State"]
    assert hc.get("Privileged") is False, hc.get("Privileged")
    drop = {c.upper().replace("CAP_", "") for c in hc.get("CapDrop") or []}
    if drop == {"ALL"}:  # Docker: what was asked
        assert {c.upper().replace("CAP_", "") for c in hc.get("CapAdd") or []} == CAPS, hc
    else:
        # Podman 4.3 answers CapDrop/CapAdd relative to its default set (CapDrop ALL comes back
        # as the defaults minus those kept, CapAdd empty); its own inspect has the sets
        assert drop >= {"NET_RAW", "MKNOD", "SETFCAP", "SETPCAP", "SYS_CHROOT"}, drop
        assert not drop & CAPS, drop
        lp = _engine_json(f"/v4.0.0/libpod/containers/{ins['Id']}/json")
        for k in ("EffectiveCaps", "BoundingCaps"):
            assert {c.replace("CAP_", "") for c in lp.get(k) or []} == CAPS, (k, lp.get(k))
    assert "no-new-privileges" in (hc.get("SecurityOpt") or []), hc.get("SecurityOpt")
    assert hc.get("PidsLimit") == PIDS_LIMIT, hc.get("PidsLimit")
    assert hc.get("ReadonlyRootfs") is True, hc.get("ReadonlyRootfs")
    tmpfs = hc.get("Tmpfs") or {}
    assert set(tmpfs) >= {"/tmp", "/var/tmp", "/run"}, tmpfs
    for path, opts in tmpfs.items():
        assert re.search(r"(^|,)size=\d+", opts), (path, opts)
    assert hc.get("ShmSize", 0) > 64 * 1024 * 1024, hc.get("ShmSize")
    assert hc.get("Memory", 0) > 0 and hc.get("MemorySwap") == hc.get("Memory"), hc
    assert hc.get("NanoCpus", 0) > 0 or hc.get("CpuQuota", 0) > 0, hc
    for k in ("PidMode", "IpcMode", "UTSMode", "UsernsMode", "CgroupnsMode"):
        assert hc.get(k, "") != "host", (k, hc.get(k))
    assert not hc.get("Devices"), hc.get("Devices")
    # binds: the job's own staging folders only, never the engine socket or a data dir root
    binds = hc.get("Binds") or []
    assert binds, hc
    assert len(binds) <= 2, binds
    for b in binds:
        src, dst = b.split(":")[:2]
        assert dst.startswith("/opt/ml"), b
        assert os.path.isdir(src) and not src.endswith(".sock"), b
        assert os.path.realpath(src) not in (os.path.realpath(data_dir), "/", "/run", "/var/run"), b
    for m in ins.get("Mounts") or []:
        assert "docker.sock" not in m.get("Source", "") and "podman.sock" not in m.get("Source", ""), m


def _network_mode(ins):
    """The container's network mode, following container:<id> to the container it joins."""
    mode = ins["HostConfig"]["NetworkMode"]
    if mode.startswith("container:"):
        ins = _engine_json(f"/v1.41/containers/{mode.split(':', 1)[1]}/json")
        assert ins["HostConfig"].get("Privileged") is False
        mode = ins["HostConfig"]["NetworkMode"]
    assert mode != "host", ins["HostConfig"]
    if mode == "none":
        return mode
    # Podman says "bridge" for any bridge network: the networks it is on
    return ",".join(sorted((ins.get("NetworkSettings") or {}).get("Networks") or {}))


def _run_and_check(server, sm, logs, name, req, hosts, probe_ips, net, mode, during=None):
    sm.create_training_job(**req)
    try:
        per = _wait_lines(logs, name, "READY", hosts=hosts)
        # inspected while the job runs (it sleeps after READY)
        ins = _training_containers(name)
        assert len(ins) == hosts, [i["Name"] for i in ins]
        for i in ins:
            _check_inspect(i, server.data_dir)
            assert _network_mode(i) == mode(i), i["HostConfig"]["NetworkMode"]
        if during:
            during()
        for lines in per:
            _check_inside(lines, probe_ips, net)
        return per
    finally:
        try:
            sm.stop_training_job(TrainingJobName=name)
        except Exception:  # noqa: BLE001 - already terminal
            pass
        H.wait_job(sm, name, timeout=120)


def _script(extra=""):
    return CHECKS + extra + "\necho READY; sleep 150 & wait\n"


def test_single_host_job_is_confined(server, sm, logs, listener):
    ips = _host_ipv4s()
    assert ips, "the host has no IPv4 address but loopback"
    name = H.unique("hard-single")
    req = H.job_request(name, _script(), Environment={
        "PROBE_IPS": " ".join(ips), "PROBE_PORT": str(listener.port)})
    _run_and_check(server, sm, logs, name, req, 1, ips, "lo,", lambda i: "none")
    assert listener.peers == [], f"the job reached the host: {listener.peers}"


def test_network_isolation_has_only_lo(server, sm, logs, listener):
    ips = _host_ipv4s()
    name = H.unique("hard-iso")
    req = H.job_request(name, _script(), EnableNetworkIsolation=True, Environment={
        "PROBE_IPS": " ".join(ips), "PROBE_PORT": str(listener.port)})
    _run_and_check(server, sm, logs, name, req, 1, ips, "lo,", lambda i: "none")
    assert listener.peers == [], f"the job reached the host: {listener.peers}"


# algo-2 sends a line to algo-1 by name over the job network; each host probes the host's
# addresses and its bridge gateway.
MULTI = r"""
if [ "$SM_CURRENT_HOST" = algo-2 ]; then n=0; until echo "hi from algo-2" | nc algo-1 5000; do n=$((n+1)); [ $n -lt 150 ] || break; sleep 0.2; done; echo "SENT $n"; fi
if [ "$SM_CURRENT_HOST" = algo-1 ]; then echo "GOT $(nc -l -p 5000)"; fi
echo "ROUTES $(ip route | grep -c default)"
"""


def test_multi_host_job_network_is_internal_and_fenced(server, sm, logs, listener):
    ips = _host_ipv4s()
    name = H.unique("hard-multi")
    req = H.job_request(name, _script(MULTI), Environment={
        "PROBE_IPS": " ".join(ips), "PROBE_PORT": str(listener.port)},
        ResourceConfig={"InstanceCount": 2})
    seen = {}

    def net_name():
        nets = H.job_networks(name)
        assert len(nets) == 1, nets
        assert nets[0]["Name"].startswith("trainyard-") and nets[0]["Name"].endswith(f"-{name}")
        return nets[0]["Name"]

    def during():
        net = _engine_json(f"/v1.41/networks/{net_name()}")
        seen["internal"] = net.get("Internal")
        seen["br"] = _bridge(net_name())
        seen["rules"] = _input_rules()

    per = _run_and_check(server, sm, logs, name, req, 2, ips, "eth0,lo,",
                         lambda i: net_name(), during=during)
    br = seen["br"]
    assert seen["internal"] is True, seen
    assert f"-A INPUT -i {br} -j REJECT" in seen["rules"], (br, seen["rules"])
    allx = [l for ls in per for l in ls]
    assert "GOT hi from algo-2" in allx, allx
    assert [l for l in allx if l.startswith("ROUTES ")] == ["ROUTES 0", "ROUTES 0"], allx
    gws = {l.split()[1] for l in allx if l.startswith("GW ") and len(l.split()) == 2}
    assert len(gws) == 1, allx
    for ls in per:
        assert f"NOREACH {next(iter(gws))}" in ls, ls
    assert listener.peers == [], f"the job reached the host: {listener.peers}"
    # the network is internal, and gone with the job with its firewall rules
    assert H.job_networks(name) == []
    assert br not in _input_rules()


def _bridge(net):
    """fence.c's bridge name of the network named net: ty- and FNV-1a 64 of the name, low 48
    bits."""
    h = 1469598103934665603
    for b in net.encode():
        h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return "ty-%012x" % (h & 0xFFFFFFFFFFFF)


def _input_rules():
    return subprocess.run(["iptables", "-w", "5", "-S", "INPUT"], capture_output=True, text=True,
                          timeout=20).stdout


def test_every_instance_type_has_limits():
    """Every TrainingInstanceType the API accepts is in the agent's table (instances.c): a type
    missing there would run without memory and CPU limits."""
    with open(os.path.join(H.REPO, "api", "sagemaker.json")) as f:
        types = set(json.load(f)["shapes"]["TrainingInstanceType"]["enum"])
    with open(os.path.join(H.REPO, "control-plane", "agent", "instances.c")) as f:
        rows = re.findall(r'\{"(ml\.[^"]+)", (\d+), GIB\(([\d.]+)\), (\d+)\}', f.read())
    table = {r[0] for r in rows}
    assert types and types <= table, sorted(types - table)
    assert all(int(r[1]) > 0 and float(r[2]) > 0 for r in rows), rows
