#!/bin/bash
# make vmtest: the root/BPF integration tests that matter for portability,
# inside other kernels booted with virtme-ng under QEMU (TCG: no KVM here).
#
#   scripts/vmtest.sh BUILD_DIR                 Debian's 6.1 and 6.12 kernels, and
#                                               6.12 PREEMPT_RT (linux-image-*-rt-amd64)
#   VMTEST_KERNELS="/path/vmlinuz-X ..." scripts/vmtest.sh BUILD_DIR
#                                               any other kernel images; their
#       modules are looked up in ../lib/modules/X next to the image's boot/
#
# A missing prerequisite (no PyPI, no apt archive, no qemu) is a loud SKIP
# (exit 0); a kernel on which the BPF programs do not load, or a test fails,
# is a FAIL (exit 1).
set -u
build=$(cd "${1:-build}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
vm=$build/vmtest
mkdir -p "$vm"

skip() {
	echo "vmtest: SKIPPED: $*"
	echo "vmtest: (nothing was tested on other kernels)"
	exit 0
}

# --- prerequisites, installed idempotently ----------------------------------
py=/usr/bin/python3
"$py" -c 'import sys; sys.exit(sys.version_info < (3, 10))' 2>/dev/null ||
	skip "virtme-ng needs Python >= 3.10 at $py"
pkgs=""
for p in qemu-system-x86 busybox-static kmod python3-venv; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' || pkgs="$pkgs $p"
done
# udev keeps the guest's exit status; pin it to the installed systemd so
# nothing else gets upgraded.
if ! dpkg-query -W -f='${Status}\n' udev 2>/dev/null | grep -q '^install ok installed'; then
	sdv=$(dpkg-query -W -f='${Version}' systemd 2>/dev/null)
	pkgs="$pkgs udev${sdv:+=$sdv}"
fi
if [ -n "$pkgs" ]; then
	echo "vmtest: installing$pkgs"
	(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		--no-install-recommends $pkgs) >"$vm/apt.log" 2>&1 ||
		skip "cannot install$pkgs (see $vm/apt.log)"
fi
if [ ! -x "$vm/venv/bin/vng" ]; then
	echo "vmtest: installing virtme-ng from PyPI into $vm/venv"
	rm -rf "$vm/venv"
	("$py" -m venv "$vm/venv" && "$vm/venv/bin/pip" install -q virtme-ng) >"$vm/pip.log" 2>&1 ||
		skip "cannot install virtme-ng from PyPI (see $vm/pip.log)"
fi
export PATH="$vm/venv/bin:$PATH"

# The kernel's headers next to its modules, for bcc (offcpu's peer test
# compiles offcputime against them): linux-headers-KVER and what it depends
# on of the kernel's own (-common, linux-kbuild-*), extracted into the same
# tree, build and source pointed there (the guest sees the host's paths).
# Without them that one test skips and says why; nothing else needs them.
headers() {
	local kver=$1 kdir=$2 deps d
	[ -f "$kdir/.headers" ] && return 0
	deps=$(apt-cache depends "linux-headers-$kver" 2>/dev/null |
		awk '/Depends: linux-(headers|kbuild)-/ {print $2}')
	mkdir -p "$vm/debs/headers-$kver"
	if ! (cd "$vm/debs/headers-$kver" && apt-get download "linux-headers-$kver" $deps) \
		>"$vm/headers.log" 2>&1; then
		echo "vmtest: no headers for $kver (see $vm/headers.log): bcc's test will skip there"
		return 0
	fi
	for d in "$vm/debs/headers-$kver"/*.deb; do
		dpkg-deb -x "$d" "$kdir" || return 0
	done
	ln -sfn "$kdir/usr/src/linux-headers-$kver" "$kdir/lib/modules/$kver/build"
	d=$(readlink "$kdir/lib/modules/$kver/source" 2>/dev/null)
	[ -n "$d" ] && ln -sfn "$kdir$d" "$kdir/lib/modules/$kver/source"
	touch "$kdir/.headers"
}

# --- kernels ------------------------------------------------------------------
if [ -n "${VMTEST_KERNELS:-}" ]; then
	kernels=$VMTEST_KERNELS
else
	kernels=""
	mkdir -p "$vm/debs" "$vm/kernels"
	for pat in '^linux-image-6\.1\.0-[0-9]+-amd64$' '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' \
		'^linux-image-6\.12\.[0-9]+\+deb12-rt-amd64$'; do
		pkg=$(apt-cache search --names-only "$pat" 2>/dev/null | awk '{print $1}' | sort -V | tail -1)
		if [ -z "$pkg" ]; then
			apt-get update -qq >/dev/null 2>&1
			pkg=$(apt-cache search --names-only "$pat" | awk '{print $1}' | sort -V | tail -1)
		fi
		[ -n "$pkg" ] || skip "no package matches $pat in the apt archive"
		kver=${pkg#linux-image-}
		kdir=$vm/kernels/$kver
		if [ ! -f "$kdir/boot/vmlinuz-$kver" ]; then
			echo "vmtest: downloading $pkg"
			(cd "$vm/debs" && apt-get download "$pkg") >"$vm/download.log" 2>&1 ||
				skip "cannot download $pkg (see $vm/download.log)"
			rm -rf "$kdir" && mkdir -p "$kdir"
			dpkg-deb -x "$vm/debs/${pkg}"_*.deb "$kdir" || skip "cannot extract $pkg"
			depmod -b "$kdir" "$kver" || skip "depmod failed for $kver"
		fi
		headers "$kver" "$kdir"
		kernels="$kernels $kdir/boot/vmlinuz-$kver"
	done
fi

# --- boot each kernel and run the guest part ----------------------------------
# One kernel: up to three boots (a guest that died is booted again, a test
# that failed never), its verdict line into $vm/NAME.result. PEER (peer or
# nopeer): whether the guest runs the comparison with bcc's offcputime.
boot_kernel() {
	local kimg=$1 peer=$2 name note="" attempt log start rc secs
	if [ ! -r "$kimg" ]; then
		echo "FAIL  $(basename "$kimg")  (no kernel image $kimg)" >"$vm/$(basename "$kimg").result"
		return
	fi
	name=$(basename "$kimg")
	# Under multi-threaded TCG, a 6.12 guest died in 2 boots of 10 while the
	# kernel patched __schedule's tracepoint (docs/guide.md, "Other kernels"); with one TCG thread
	# for both vCPUs, 0 of 10 (and 0 of 10 on 6.1), at the same speed. The
	# three boots stay as a net for what is left.
	for attempt in 1 2 3; do
		echo "vmtest: === $name: booting with vng --disable-kvm (QEMU TCG, one thread for 2 vCPUs)"
		log=$vm/$name.$attempt.console.log
		start=$(date +%s)
		# The whole console goes to $log; the kernel's own lines stay out of the output.
		timeout 900 vng --verbose --disable-kvm --cpus 2 --memory 2G \
			--qemu-opts="-accel tcg,thread=single" -r "$kimg" \
			--exec "$top/scripts/vmtest-guest.sh $build $peer" 2>&1 | tee "$log" |
			grep --line-buffered -vE '^\[ *[0-9]+\.[0-9]+\]' | sed -u "s/^/[$name] /"
		rc=${PIPESTATUS[0]}
		secs=$(($(date +%s) - start))
		# The guest script always ends with its summary line; without it the
		# guest itself died or locked up (docs/guide.md, "Other kernels"): show why, boot once more,
		# loudly. A test that fails is never retried.
		grep -q '^vmtest-guest: tests on ' "$log" && break
		[ "$attempt" -lt 3 ] || break
		echo "vmtest: !!! $name: the guest died or hung (exit $rc after ${secs}s); its console's last lines:"
		grep -E '^\[ *[0-9]+\.[0-9]+\]' "$log" | tail -25 | sed "s/^/[$name console] /"
		echo "vmtest: !!! $name: booting it once more (full console: $log)"
		note=" after $attempt guest death(s)/lockup(s)"
	done
	if [ "$rc" -eq 0 ]; then
		echo "PASS  $name  (${secs}s for boot and tests$note)"
	elif ! grep -q '^vmtest-guest: tests on ' "$log" && ! grep -q '^\[FAIL\]' "$log"; then
		# The guest died on every boot before its tests could finish, with no test
		# failing: not a result either way. Said, never counted as a pass.
		echo "NOT TESTED  $name  (the guest died or hung on all 3 boots, no test had failed; consoles: $vm/$name.*.console.log)"
	else
		echo "FAIL  $name  (exit $rc after ${secs}s$note)"
	fi >"$vm/$name.result"
}

# Two guests at a time, each QEMU one host thread (the suite's last step has
# the machine to itself; three guests one after the other took longer than
# the rest of the suite together, and three QEMUs on two CPUs make every
# guest slower). bcc's offcputime compiles its program in the guest, most of
# a guest's time: it runs in every guest but the first kernel's (by default
# 6.12's only). The first kernel's guest, without it, is followed by the
# PREEMPT_RT guests in the same slot, so both slots take about as long.
# Their tests take no timing bounds in a guest (RK_SLOW). The RT guest's old
# hangs were the recorder spinning on a hung-up ring (docs/design.md,
# PREEMPT_RT).
cd "$top"
rm -f "$vm"/*.result
plain="" rts=""
for kimg in $kernels; do
	case $kimg in *-rt-*) rts="$rts $kimg" ;; *) plain="$plain $kimg" ;; esac
done
set -- $plain
if [ $# -ge 2 ]; then
	(
		boot_kernel "$1" nopeer
		for kimg in $rts; do boot_kernel "$kimg" nopeer; done
	) &
	shift
	for kimg in "$@"; do boot_kernel "$kimg" peer & done
	wait
else
	for kimg in "$@"; do boot_kernel "$kimg" peer; done
	for kimg in $rts; do boot_kernel "$kimg" nopeer; done
fi
status=0
untested=0
summary=""
for kimg in $kernels; do
	r=$(cat "$vm/$(basename "$kimg").result" 2>/dev/null || echo "FAIL  $(basename "$kimg")  (no verdict)")
	summary="$summary\n  $r"
	case $r in
	PASS*) ;;
	NOT\ TESTED*) untested=$((untested + 1)) ;;
	*) status=1 ;;
	esac
done
# A failing test's own words at the end, where a CI log's tail shows them:
# the guests' outputs above interleave and may be cut.
for kimg in $kernels; do
	name=$(basename "$kimg")
	case $(cat "$vm/$name.result" 2>/dev/null) in FAIL*) ;; *) continue ;; esac
	log=$(ls -t "$vm/$name".*.console.log 2>/dev/null | head -1)
	[ -n "$log" ] || continue
	echo "vmtest: $name: what failed (from $log):"
	grep -aE '^\[(----|FAIL)\] ' "$log" | grep -avE '^\[----\] (Criterion|Running)' |
		tail -40 | sed "s/^/  [$name] /"
done
printf "vmtest: results:%b\n" "$summary"
[ "$untested" -eq 0 ] ||
	echo "vmtest: WARNING: $untested kernel(s) NOT TESTED: their guests died under QEMU TCG (docs/guide.md, Other kernels)"
exit $status
