#!/bin/bash
# One-time, idempotent host setup for the VM tests (Debian 12, run as root by `make vm-test`):
# QEMU + busybox-static + cpio from apt, and Debian's Linux 6.12 kernel package fetched with
# `apt-get download` into target/vm/cache and unpacked there (nothing is installed into /boot).
# Leaves, for build-initramfs.sh and run.sh:
#   target/vm/cache/vmlinux      uncompressed kernel for QEMU's PVH direct boot
#   target/vm/cache/modules/*.ko the dax modules (device_dax, kmem, dax_hmem), uncompressed
#   target/vm/cache/kernel.env   KVER=<uname -r of the guest>
set -euo pipefail
cd "$(dirname "$0")/../.."
CACHE=target/vm/cache
mkdir -p "$CACHE/debs"
export DEBIAN_FRONTEND=noninteractive

die() { echo "vm setup: $*" >&2; exit 1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
UPDATED=0
apt_update() { [ "$UPDATED" = 1 ] || { apt-get update -qq; UPDATED=1; }; }

# 1. Host tools. gcc/libc6-dev build the static guest programs; zstd/xz-utils unpack the kernel.
PKGS="qemu-system-x86 busybox-static cpio gcc libc6-dev xz-utils zstd"
MISSING=""
for p in $PKGS; do installed "$p" || MISSING="$MISSING $p"; done
if [ -n "$MISSING" ]; then
    echo "vm setup: installing$MISSING"
    # Update the package lists only when apt does not know the packages (fresh machine).
    for p in $MISSING; do
        apt-cache show "$p" >/dev/null 2>&1 || { apt_update; break; }
    done
    # shellcheck disable=SC2086
    apt-get install -y -qq --no-install-recommends $MISSING >/dev/null || { apt_update; apt-get install -y -qq --no-install-recommends $MISSING >/dev/null; }
fi

# 2. The newest Linux 6.12 kernel package apt knows, downloaded once into the cache.
pick_kernel() {
    KPKG=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9]+\+deb12-amd64-unsigned$' 2>/dev/null \
        | awk '{print $1}' | sort -V | tail -1)
    KVER=${KPKG#linux-image-}; KVER=${KVER%-unsigned}
}
cached_deb() { ls "$CACHE"/debs/"${KPKG}"_*.deb 2>/dev/null | head -1 || true; }
download() { [ -n "$KPKG" ] && (cd "$CACHE/debs" && apt-get download -qq -o APT::Sandbox::User=root "$KPKG"); }
pick_kernel
[ -n "$KPKG" ] || { apt_update; pick_kernel; }
DEB=$(cached_deb)
if [ -z "$DEB" ] && ! download; then
    # Stale package lists name a version the archive no longer has: refresh and pick again.
    apt_update; pick_kernel; DEB=$(cached_deb)
    [ -n "$DEB" ] || download || die "cannot download ${KPKG:-a linux-image-6.12.*+deb12-amd64-unsigned package}"
fi
[ -n "$DEB" ] || DEB=$(cached_deb)
[ -n "$DEB" ] || die "apt knows no linux-image-6.12.*+deb12-amd64-unsigned package"
echo "vm setup: kernel package $KPKG"
KROOT=$CACHE/kroot-$KVER
if [ ! -d "$KROOT/boot" ]; then
    rm -rf "$KROOT.tmp" && dpkg-deb -x "$DEB" "$KROOT.tmp" && mv "$KROOT.tmp" "$KROOT"
fi

# Skip the extraction steps when this kernel's artefacts are already in place.
if [ -f "$CACHE/kernel.env" ] && grep -qx "KVER=$KVER" "$CACHE/kernel.env" && [ -s "$CACHE/vmlinux" ]; then
    echo "vm setup: $KVER ready ($(grep -h '^CONFIG_DAMON_SYSFS=' "$KROOT"/boot/config-*))"
    exit 0
fi

# 3. Uncompressed vmlinux: the bzImage carries it xz- or zstd-compressed; find the payload by
#    its magic and decompress it (PVH direct boot saves ~2 s per boot under TCG).
python3 - "$KROOT/boot/vmlinuz-$KVER" "$CACHE/vmlinux.tmp" <<'PY'
import lzma, shutil, subprocess, sys
src, dst = sys.argv[1], sys.argv[2]
data = open(src, "rb").read()
xz, zst = data.find(b"\xfd7zXZ\x00"), data.find(b"\x28\xb5\x2f\xfd")
cands = sorted((off, kind) for off, kind in ((xz, "xz"), (zst, "zstd")) if off >= 0)
if not cands:
    sys.exit(f"no xz or zstd payload in {src}")
off, kind = cands[0]
if kind == "xz":
    out = lzma.LZMADecompressor().decompress(data[off:])
else:
    # zstd reports trailing garbage after the frame; the decompressed frame is still complete.
    res = subprocess.run(["zstd", "-dc", "-q"], input=data[off:], capture_output=True)
    out = res.stdout
if out[:4] != b"\x7fELF":
    sys.exit(f"{kind} payload of {src} is not an ELF vmlinux")
open(dst, "wb").write(out)
print(f"vm setup: vmlinux from {kind} payload, {len(out) >> 20} MiB")
PY
mv "$CACHE/vmlinux.tmp" "$CACHE/vmlinux"

# 4. dax modules for the soft-reserved -> dax_hmem -> kmem hot-plug of node 1, uncompressed
#    (busybox insmod hands the file to init_module as is).
rm -rf "$CACHE/modules" && mkdir -p "$CACHE/modules"
MDIR=$KROOT/lib/modules/$KVER
for m in device_dax kmem dax_hmem; do
    f=$(find "$MDIR/kernel/drivers/dax" -name "$m.ko*" | head -1)
    [ -n "$f" ] || die "$m.ko missing under $MDIR/kernel/drivers/dax"
    case "$f" in
        *.ko.xz) xz -dc "$f" > "$CACHE/modules/$m.ko" ;;
        *.ko.zst) zstd -dcq "$f" > "$CACHE/modules/$m.ko" ;;
        *.ko.gz) gzip -dc "$f" > "$CACHE/modules/$m.ko" ;;
        *.ko) cp "$f" "$CACHE/modules/$m.ko" ;;
        *) die "unknown module format: $f" ;;
    esac
    deps=$(tr '\0' '\n' < "$CACHE/modules/$m.ko" | sed -n 's/^depends=//p')
    [ -z "$deps" ] || die "$m.ko depends on modules the guest does not load: $deps"
    echo "vm setup: module ${f#"$MDIR"/}"
done

# 5. The features the tests rely on must be built in.
CONFIG=$KROOT/boot/config-$KVER
for opt in CONFIG_DAMON_SYSFS=y CONFIG_DAMON_VADDR=y CONFIG_NUMA_BALANCING=y CONFIG_MIGRATION=y; do
    grep -qx "$opt" "$CONFIG" || die "$opt not set in $CONFIG"
done
echo "vm setup: $(grep -h -E '^CONFIG_(DAMON_SYSFS|DAMON_VADDR|DEV_DAX_HMEM|DEV_DAX_KMEM|MODULE_DECOMPRESS)=' "$CONFIG" | tr '\n' ' ')"
echo "KVER=$KVER" > "$CACHE/kernel.env"
# Keep only this kernel in the cache.
for d in "$CACHE"/kroot-*; do [ "$d" = "$KROOT" ] || rm -rf "$d"; done
for f in "$CACHE"/debs/*.deb; do [ "$f" = "$DEB" ] || rm -f "$f"; done
echo "vm setup: $KVER ready"
