#!/usr/bin/env bash
# build-rootfs.sh - assembles the root filesystem of trainyard/runtime offline and tars it.
#
# usage: build-rootfs.sh OUT.tar TRAINYARD_TRAIN [SRC:DEST ...]
#   OUT.tar          the image tarball to write (plain tar, owner root)
#   TRAINYARD_TRAIN  the trainyard-train binary (installed as /usr/bin/trainyard-train,
#                    with /usr/bin/train linking to it so that `docker run IMAGE train` works)
#   SRC:DEST         more files to install (e.g. build/trainyard-builtin:/usr/bin/trainyard-builtin)
# Environment: BUSYBOX (default /bin/busybox, Debian's busybox-static).
#
# Needs no registry and no root: the rootfs is busybox (a shell and the usual tools as
# symlinks), the binaries, the shared libraries they need (found with ldd, so a dynamically
# linked binary works too), /etc/passwd, /etc/group, /tmp (1777) and /opt/ml. The tar is
# reproducible: sorted names, owner 0:0, mtime $SOURCE_DATE_EPOCH (default 0).
set -euo pipefail

die() {
    echo "build-rootfs.sh: $*" >&2
    exit 1
}

[ $# -ge 2 ] || die "usage: build-rootfs.sh OUT.tar TRAINYARD_TRAIN [SRC:DEST ...]"
out=$1
train=$2
shift 2
busybox=${BUSYBOX:-/bin/busybox}
[ -x "$train" ] || die "'$train' is not an executable"
[ -x "$busybox" ] || die "'$busybox' not found (apt-get install -y busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
    die "'$busybox' is dynamically linked; install busybox-static"
fi

umask 022
root=$(mktemp -d "${TMPDIR:-/tmp}/trainyard-rootfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
chmod 0755 "$root"

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,etc,root,dev,proc,sys,run,var/tmp}
mkdir -p "$root"/opt/ml/{code,model,input/config,input/data,output/data,output/intermediate}
mkdir -p "$root"/tmp
chmod 1777 "$root"/tmp "$root"/var/tmp
chmod 0700 "$root"/root

# busybox and its applets as relative symlinks (busybox --install -s, but inside $root)
install -m 0755 "$busybox" "$root"/bin/busybox
"$busybox" --list-full | while read -r applet; do
    case "$applet" in
    bin/busybox | "") continue ;;
    esac
    dir=$(dirname "$applet")
    mkdir -p "$root/$dir"
    rel=$(realpath -m -s --relative-to="/$dir" /bin/busybox)
    [ -e "$root/$applet" ] || ln -s "$rel" "$root/$applet"
done
[ -L "$root"/bin/sh ] || die "busybox has no sh applet"

# wget -T: Debian's busybox-static is built without FEATURE_WGET_TIMEOUT, yet wget's option
# string still declares -T with a numeric argument ("T:+") whose destination is then NULL:
# `wget -T 5 URL` dies with SIGSEGV in option parsing (getopt32 stores the number through the
# NULL pointer, before any network call). Shells built with FEATURE_SH_STANDALONE run the applet
# whatever PATH says, so a wrapper script cannot help: the copy in the image gets the option
# string "T:+t:n::" rewritten to "T:t:n:::" (same length): -T takes a string argument that
# getopt32 drops (it checks the destination of strings), so -T is accepted and ignored (there is
# no timeout in this build; use `timeout N wget ...`). The extra ':' only ends n's optional
# argument. A busybox without that string is left alone.
patch_wget_opts() {
    local bb=$1 old='cqSO:o:P:Y:U:T:+t:n::' off n
    n=$(LC_ALL=C grep -obUaF -- "$old" "$bb" | wc -l)
    [ "$n" = 1 ] || return 0
    off=$(LC_ALL=C grep -obUaF -- "$old" "$bb" | cut -d: -f1)
    printf 'T:t:n:::' | dd of="$bb" bs=1 seek=$((off + 13)) conv=notrunc status=none
    LC_ALL=C grep -qaF -- 'cqSO:o:P:Y:U:T:t:n:::' "$bb" || die "patching busybox wget's options failed"
}
patch_wget_opts "$root"/bin/busybox

# Copies a binary's shared libraries (and the dynamic loader) into the rootfs.
copy_libs() {
    local bin=$1 lib
    if ! ldd "$bin" >/dev/null 2>&1; then
        return 0 # static
    fi
    ldd "$bin" | awk '/=> \// {print $3} /^\t\/[^ ]+ \(/ {print $1}' | while read -r lib; do
        [ -e "$root$lib" ] && continue
        mkdir -p "$root$(dirname "$lib")"
        cp -L "$lib" "$root$lib"
    done
}

install_file() {
    local src=$1 dest=$2
    [ -e "$src" ] || die "'$src' not found"
    mkdir -p "$root$(dirname "$dest")"
    install -m 0755 "$src" "$root$dest"
    copy_libs "$src"
}

install_file "$train" /usr/bin/trainyard-train
ln -s trainyard-train "$root"/usr/bin/train
for pair in "$@"; do
    [ -n "$pair" ] || continue
    [[ "$pair" == *:/* ]] || die "'$pair': expected SRC:/DEST"
    install_file "${pair%%:/*}" "/${pair#*:/}"
done

cat >"$root"/etc/passwd <<'PASSWD'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/nonexistent:/bin/false
PASSWD
cat >"$root"/etc/group <<'GROUP'
root:x:0:
nogroup:x:65534:
GROUP
printf 'hosts: files dns\n' >"$root"/etc/nsswitch.conf
: >"$root"/etc/hosts
: >"$root"/etc/resolv.conf
printf 'trainyard\n' >"$root"/etc/hostname
cat >"$root"/etc/os-release <<'OSREL'
NAME="trainyard runtime"
ID=trainyard
OSREL

mkdir -p "$(dirname "$out")"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@${SOURCE_DATE_EPOCH:-0}" \
    -C "$root" -cf "$out.tmp" .
mv "$out.tmp" "$out"
echo "build-rootfs.sh: wrote $out ($(du -h "$out" | cut -f1))"
