#!/bin/sh
# Regenerate the checked-in vmlinux.h from a kernel's BTF, so builds do not
# depend on the build machine's kernel (as bcc libbpf-tools do).
#   scripts/gen-vmlinux.sh [BTF-FILE] [ARCH]
set -eu
btf=${1:-/sys/kernel/btf/vmlinux}
arch=${2:-$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')}
top=$(cd "$(dirname "$0")/.." && pwd)
bpftool=${BPFTOOL:-bpftool}
command -v "$bpftool" >/dev/null 2>&1 || { echo "gen-vmlinux: bpftool not found (make deps)" >&2; exit 1; }
[ -r "$btf" ] || { echo "gen-vmlinux: cannot read BTF at $btf (kernel needs CONFIG_DEBUG_INFO_BTF=y)" >&2; exit 1; }
mkdir -p "$top/vmlinux/$arch"
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
"$bpftool" btf dump file "$btf" format c >"$tmp"
mv "$tmp" "$top/vmlinux/$arch/vmlinux.h"
trap - EXIT
echo "gen-vmlinux: wrote vmlinux/$arch/vmlinux.h from $btf"
