#!/usr/bin/env bash
# cluster.sh - a real Slurm cluster on loopback for the tests (Debian's slurm-wlm 22.05,
# slurmrestd, munge): munged, slurmctld, N slurmd (one per node, several on one host), and
# slurmrestd with JWT, all from a private folder, nothing under /etc/slurm or /run/munge.
#
#   tests/slurm/cluster.sh up DIR [NODES] [GPUS_PER_NODE] [netns]   start; prints KEY=VALUE
#   tests/slurm/cluster.sh down DIR                                  stop every daemon it started
#
# With netns, each slurmd runs in a network namespace of its own (entered with nsenter: `ip
# netns exec` remounts /sys, which slurmd does not survive), with the address 10.213.0.<10+i> on
# a bridge that lives in a namespace of its own too; one veth joins the bridge to this host at
# 10.213.0.254, where slurmctld and the tests' services are reached (SLURM_HOST_ADDR). A job's
# hosts then have addresses of their own, as on a real cluster. One netns cluster at a time.
#
# up prints SLURM_CONF, SLURM_REST_URL (http://127.0.0.1:<port>), SLURM_JWT_KEY (the HS256 key
# slurmctld checks tokens with), SLURM_NODES (n1 ... nN), SLURM_PARTITION, SLURM_JOBS_DIR (a
# folder the jobs may write) and SLURM_HOST_ADDR (where the nodes reach this host's services:
# 127.0.0.1, or 10.213.0.254 with netns), and writes the same lines to DIR/cluster.env. A cluster already in
# DIR is stopped first. The nodes get
# GPUS_PER_NODE (default 2) fake GPUs: character devices 195:N in DIR/dev, as Slurm's GRES wants.
# With TY_SLURM_EPILOG=<trainyard-launch>, every node's Epilog runs it (engine $TY_DOCKER_HOST,
# staging folder DIR/jobs/launch-staging), as docs/slurm.md asks of a site.
# Needs root (slurmd, mknod) and the user slurm (slurmrestd refuses root).
set -euo pipefail

die() { echo "cluster.sh: $*" >&2; exit 1; }

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

NET=10.213.0

# The network namespaces' names for DIR: ty<6 hex of its path>-br, -n1, ...
ns_tag() { echo "ty$(printf '%s' "$1" | md5sum | cut -c1-6)"; }

netns_down() {
    local tag ns
    tag=$(ns_tag "$1")
    for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$tag-" || true); do
        ip netns del "$ns" 2>/dev/null || true
    done
    ip link del "${tag}h" 2>/dev/null || true
}

# netns_up DIR NODES: the bridge's namespace, this host's veth to it, one namespace per node.
netns_up() {
    local tag i
    tag=$(ns_tag "$1")
    command -v ip >/dev/null && command -v nsenter >/dev/null || die "ip and nsenter missing"
    ip -o addr show | grep -q " $NET\." && die "$NET.0/24 is in use on this host (another netns cluster?)"
    ip netns add "$tag-br"
    ip -n "$tag-br" link set lo up
    ip -n "$tag-br" link add br0 type bridge
    ip -n "$tag-br" link set br0 up
    ip link add "${tag}h" type veth peer name up0 netns "$tag-br"
    ip -n "$tag-br" link set up0 master br0 up
    ip addr add "$NET.254/24" dev "${tag}h"
    ip link set "${tag}h" up
    for i in $(seq 1 "$2"); do
        ip netns add "$tag-n$i"
        ip link add "${tag}v$i" netns "$tag-br" type veth peer name eth0 netns "$tag-n$i"
        ip -n "$tag-br" link set "${tag}v$i" master br0 up
        ip -n "$tag-n$i" addr add "$NET.$((10 + i))/24" dev eth0
        ip -n "$tag-n$i" link set eth0 up
        ip -n "$tag-n$i" link set lo up
    done
}

down() {
    local dir=$1 f pid conf
    [ -d "$dir" ] || return 0
    # slurmstepd outlives its slurmd (a node set down keeps its steps running): every process
    # started under this cluster's configuration goes, tasks included
    conf="SLURM_CONF=$(cd "$dir" 2>/dev/null && pwd)/etc/slurm.conf"
    for pid in $(pgrep -x slurmstepd) $(pgrep -x srun) $(pgrep -f trainyard-launch) \
        $(pgrep -f "$dir/jobs/"); do
        if { tr '\0' '\n' <"/proc/$pid/environ"; } 2>/dev/null | grep -qxF "$conf"; then
            kill -KILL "$pid" 2>/dev/null || true
        fi
    done
    for f in "$dir"/run/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null || true
    done
    for _ in $(seq 1 50); do
        local alive=0
        for f in "$dir"/run/*.pid; do
            [ -f "$f" ] || continue
            pid=$(cat "$f" 2>/dev/null || true)
            [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && alive=1
        done
        [ $alive = 0 ] && break
        sleep 0.1
    done
    for f in "$dir"/run/*.pid; do
        [ -f "$f" ] || continue
        pid=$(cat "$f" 2>/dev/null || true)
        [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null || true
        rm -f "$f"
    done
    [ -f "$dir/netns" ] && netns_down "$(cat "$dir/netns")"
    rm -f "$dir/netns"
}

# spawn NAME CMD...: runs CMD in the background with its output in DIR/log/NAME.out, its pid
# in DIR/run/NAME.pid
spawn() {
    local name=$1; shift
    "$@" >"$DIR/log/$name.out" 2>&1 &
    echo $! >"$DIR/run/$name.pid"
}

up() {
    DIR=$1
    local nodes=${2:-2} gpus=${3:-2} netns=${4:-} host_addr=127.0.0.1
    [ "$(id -u)" = 0 ] || die "needs root"
    case "$DIR" in "" | / | /tmp | /tmp/) die "refusing DIR '$DIR'" ;; esac
    [ -d "$DIR/run" ] && down "$DIR" # a cluster left by an earlier run
    rm -rf "$DIR"
    id slurm >/dev/null 2>&1 || die "no user slurm (apt-get install slurm-wlm)"
    for b in munged slurmctld slurmd slurmrestd scontrol sinfo; do
        command -v "$b" >/dev/null || die "$b missing (apt-get install slurm-wlm slurmrestd munge)"
    done
    mkdir -p "$DIR"/{etc,run,log,spool,dev,jobs,munge/sock,munge/key}
    DIR=$(cd "$DIR" && pwd)
    if [ "$netns" = netns ]; then
        netns_down "$DIR" # what a crashed run left
        echo "$DIR" >"$DIR/netns"
        netns_up "$DIR" "$nodes"
        host_addr=$NET.254
    fi
    chmod 755 "$DIR" "$DIR"/etc "$DIR"/log "$DIR"/jobs
    chmod 700 "$DIR"/munge/key
    chmod 755 "$DIR"/munge "$DIR"/munge/sock
    # munge: a key of its own, a socket in DIR
    head -c 1024 /dev/urandom >"$DIR/munge/key/munge.key"
    chmod 400 "$DIR/munge/key/munge.key"
    local sock="$DIR/munge/sock/munge.socket"
    spawn munged munged -F -f --socket="$sock" --key-file="$DIR/munge/key/munge.key" \
        --log-file="$DIR/log/munged.log" --pid-file="$DIR/run/munged-own.pid" \
        --seed-file="$DIR/munge/seed"
    # the JWT key slurmctld checks tokens with (readable by slurm only through the tests' root)
    head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/etc/jwt_hs256.key"
    chown slurm "$DIR/etc/jwt_hs256.key"
    chmod 400 "$DIR/etc/jwt_hs256.key"

    local ctld rest port_i=0
    ctld=$(free_port)
    rest=$(free_port)
    local conf="$DIR/etc/slurm.conf" gres="$DIR/etc/gres.conf"
    cat >"$conf" <<EOF
ClusterName=tytest
SlurmctldHost=$(hostname -s)($host_addr)
SlurmctldPort=$ctld
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
AuthAltTypes=auth/jwt
AuthAltParameters=jwt_key=$DIR/etc/jwt_hs256.key
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/%n
SlurmctldPidFile=$DIR/run/slurmctld-own.pid
SlurmdPidFile=$DIR/run/slurmd-%n-own.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
GresTypes=gpu
ReturnToService=2
SlurmdTimeout=10
SlurmctldTimeout=30
MessageTimeout=10
KillWait=5
InactiveLimit=0
MinJobAge=300
SchedulerParameters=batch_sched_delay=0
EOF
    if [ -n "${TY_SLURM_EPILOG:-}" ]; then
        # trainyard-launch as every node's Epilog: it removes what a killed launcher left
        printf '#!/bin/sh\nexec env TRAINYARD_DOCKER_HOST=%s TRAINYARD_LAUNCH_STAGING_DIR=%s %s >>%s 2>&1\n' \
            "${TY_DOCKER_HOST:-unix:///run/trainyard-podman.sock}" "$DIR/jobs/launch-staging" \
            "$TY_SLURM_EPILOG" "$DIR/log/epilog.log" >"$DIR/etc/epilog.sh"
        chmod 755 "$DIR/etc/epilog.sh"
        echo "Epilog=$DIR/etc/epilog.sh" >>"$conf"
    fi
    echo "AutoDetect=off" >"$gres"
    local names=()
    for i in $(seq 1 "$nodes"); do
        local n="n$i" p addr=127.0.0.1
        p=$(free_port)
        [ "$netns" = netns ] && addr=$NET.$((10 + i)) && p=6818
        names+=("$n")
        echo "NodeName=$n NodeHostname=$(hostname -s) NodeAddr=$addr Port=$p CPUs=2 RealMemory=2000${gpus:+ Gres=gpu:$gpus} State=UNKNOWN" >>"$conf"
        if [ "$gpus" -gt 0 ]; then
            for g in $(seq 0 $((gpus - 1))); do
                [ -e "$DIR/dev/$n-nvidia$g" ] || mknod "$DIR/dev/$n-nvidia$g" c 195 "$g"
            done
            echo "NodeName=$n Name=gpu File=$DIR/dev/$n-nvidia[0-$((gpus - 1))]" >>"$gres"
        fi
        mkdir -p "$DIR/spool/$n"
    done
    [ "$gpus" -gt 0 ] || sed -i 's/^GresTypes=gpu$//' "$conf"
    echo "PartitionName=debug Nodes=n[1-$nodes] Default=YES MaxTime=INFINITE State=UP" >>"$conf"
    chmod 644 "$conf" "$gres"
    mkdir -p "$DIR/spool/ctld"

    for _ in $(seq 1 50); do [ -S "$sock" ] && break; sleep 0.1; done
    [ -S "$sock" ] || { cat "$DIR/log/munged.out" >&2; die "munged did not start"; }
    export SLURM_CONF="$conf"
    spawn slurmctld slurmctld -D -i -f "$conf"
    for n in "${names[@]}"; do
        if [ "$netns" = netns ]; then
            spawn "slurmd-$n" nsenter --net="/run/netns/$(ns_tag "$DIR")-$n" \
                slurmd -D -N "$n" -f "$conf"
        else
            spawn "slurmd-$n" slurmd -D -N "$n" -f "$conf"
        fi
    done
    spawn slurmrestd runuser -u slurm -- env SLURM_CONF="$conf" SLURM_JWT=daemon \
        slurmrestd -a rest_auth/jwt -s openapi/v0.0.38 "127.0.0.1:$rest"
    local ok=0
    for _ in $(seq 1 300); do
        if [ "$(sinfo -h -o %T 2>/dev/null | sort -u | tr -d '\n')" = idle ]; then ok=1; break; fi
        sleep 0.1
    done
    [ $ok = 1 ] || { tail -5 "$DIR"/log/*.log >&2; die "the nodes are not idle after 30 s"; }
    ok=0
    local tok
    tok=$(scontrol token username=slurm lifespan=60 2>/dev/null | sed -n 's/^SLURM_JWT=//p')
    for _ in $(seq 1 300); do
        if curl -fsS -o /dev/null -H "X-SLURM-USER-NAME: slurm" -H "X-SLURM-USER-TOKEN: $tok" \
            "http://127.0.0.1:$rest/slurm/v0.0.38/ping" 2>/dev/null; then ok=1; break; fi
        sleep 0.1
    done
    [ $ok = 1 ] || { cat "$DIR/log/slurmrestd.out" >&2; die "slurmrestd does not answer after 30 s"; }
    {
        echo "SLURM_CONF=$conf"
        echo "SLURM_REST_URL=http://127.0.0.1:$rest"
        echo "SLURM_JWT_KEY=$DIR/etc/jwt_hs256.key"
        echo "SLURM_NODES=${names[*]}"
        echo "SLURM_PARTITION=debug"
        echo "SLURM_JOBS_DIR=$DIR/jobs"
        echo "SLURM_HOST_ADDR=$host_addr"
    } | tee "$DIR/cluster.env"
}

case "${1:-}" in
up) [ $# -ge 2 ] || die "usage: cluster.sh up DIR [NODES] [GPUS_PER_NODE] [netns]"
    up "$2" "${3:-2}" "${4:-2}" "${5:-}" ;;
down) [ $# -ge 2 ] || die "usage: cluster.sh down DIR"; down "$2" ;;
*) die "usage: cluster.sh up DIR [NODES] [GPUS_PER_NODE] [netns] | down DIR" ;;
esac
