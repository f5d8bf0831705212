#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench.sh - ringkeeper's benchmarks (make bench). Prints figures, each next
# to a baseline measured in the same run; repeated figures as
# min / median / max over RUNS runs. Never a pass/fail verdict.
#
#   RUNS=5 ROUNDS=100000 AB_ROUNDS=300000 AB_SEG=3000 NTHREADS="16 256 4096" SNAP_TRIGGERS=20 \
#   SECTIONS="mem switch wakeups switchab progtime pin rate scale system coredump view snapshot offcpu" \
#       scripts/bench.sh
#   SECTIONS=servers scripts/bench.sh     redis, nginx, postgres (scripts/bench-servers.sh)
#   SECTIONS=churn scripts/bench.sh       thread births and deaths against perf (issue 49)
#   SECTIONS=soak SOAK_MIN=10 SOAK_RATE=3000 scripts/bench.sh   the service's options, 2 x SOAK_MIN min
#
# Needs root (BPF, perf), the build (make all and the bench programs), perf.
set -u

RUNS=${RUNS:-5}
ROUNDS=${ROUNDS:-100000}
NTHREADS=${NTHREADS:-"16 256 4096"}
SECTIONS=${SECTIONS:-"mem switch wakeups switchab progtime pin rate scale system coredump view snapshot offcpu churn"}
SNAP_TRIGGERS=${SNAP_TRIGGERS:-20}
VIEW_THREADS=${VIEW_THREADS:-2000}
SCALE_THREADS=${SCALE_THREADS:-"64 512 4096"}
SCALE_SLEEPS=${SCALE_SLEEPS:-"20000 5000 1000"}
RATE_SECS=${RATE_SECS:-5}
AB_ROUNDS=${AB_ROUNDS:-300000}
AB_SEG=${AB_SEG:-3000}
cd "$(dirname "$0")/.."
RK=$PWD/build/ringkeeper
WRAP= # set for one start_recorder call only; never taken from the environment
B=$PWD/build/bench
NCPU=$(nproc)
ROOT=$(mktemp -d /dev/shm/rk-bench.XXXXXX)
BG=()

die() { echo "bench: $*" >&2; exit 1; }
# An empty cgroup v2 directory for the --cgroup rows (removed at exit).
BENCH_CG=
cleanup() {
	local p
	for p in "${BG[@]}"; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -n "$BENCH_CG" ] && rmdir "$BENCH_CG" 2>/dev/null
	rm -rf "$ROOT"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ "$(id -u)" = 0 ] || die "needs root (BPF programs, perf events)"
for f in "$RK" "$B/pingpong" "$B/idlebusy" "$B/noop_attach" "$B/noop.bpf.o" "$B/clock.bpf.o" "$B/stamp.bpf.o" "$B/fanout" "$B/bursts"; do
	[ -e "$f" ] || die "missing $f: run 'make bench'"
done
command -v perf >/dev/null || die "perf not found (make deps installs linux-perf)"
mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
[ -d /sys/kernel/tracing/events ] || mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null

# min median max of numbers on stdin
mmm() { sort -g | awk '{a[NR]=$1} END { if (!NR) { print "- - -"; exit }
	printf "%.0f %.0f %.0f\n", a[1], a[int((NR+1)/2)], a[NR] }'; }
# the same, to the ms (seconds)
mmm3() { sort -g | awk '{a[NR]=$1} END { if (!NR) { print "- - -"; exit }
	printf "%.3f %.3f %.3f\n", a[1], a[int((NR+1)/2)], a[NR] }'; }
# a field of 'ringkeeper stat --json'
jfield() { grep -o "\"$2\":[0-9]*" <<<"$1" | head -1 | cut -d: -f2; }
kib() { awk -v b="$1" 'BEGIN { printf "%.0f KiB", b / 1024 }'; }
# Bytes of a process's perf ring mappings (what the kernel pins for them).
perf_maps_bytes() {
	grep -F perf_event "/proc/$1/maps" 2>/dev/null | {
		s=0
		while read -r range rest; do
			s=$(( s + 0x${range#*-} - 0x${range%-*} ))
		done
		echo "$s"
	}
}
# Wait (30 s at most) until FILE says "ready" while LAST runs; its stderr on failure.
wait_ready() {
	local i
	BG+=("$LAST")
	for i in $(seq 1 600); do
		grep -q ready "$1" 2>/dev/null && return 0
		kill -0 "$LAST" 2>/dev/null || { cat "$2" >&2; return 1; }
		sleep 0.05
	done
	return 1
}
# Start "$@" in the background with stdout to $ROOT/$name.out; wait for "ready".
start_ready() {
	local name=$1; shift
	"$@" >"$ROOT/$name.out" 2>"$ROOT/$name.err" &
	LAST=$!
	wait_ready "$ROOT/$name.out" "$ROOT/$name.err"
}
# A recorder started in the background: its --ready-fd goes to a file. WRAP:
# a program to run it under (statson), none if unset.
start_recorder() {
	local name=$1; shift
	${WRAP:-} "$RK" record --root "$ROOT" --session "$name" --ready-fd 3 "$@" \
		3>"$ROOT/$name.ready" >"$ROOT/$name.out" 2>"$ROOT/$name.err" &
	LAST=$!
	wait_ready "$ROOT/$name.ready" "$ROOT/$name.err"
}
stop_bg() { kill -INT "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# Real servers (SECTIONS=servers; not in the default list: ~10 minutes).
. "$PWD/scripts/bench-servers.sh"

echo "ringkeeper benchmarks: $(uname -r), $NCPU CPUs, $(perf --version), $(date -u +%F)"
echo "perf_event_mlock_kb $(cat /proc/sys/kernel/perf_event_mlock_kb)," \
	"max sample rate $(cat /proc/sys/kernel/perf_event_max_sample_rate) Hz; RUNS=$RUNS"

# --- 1. locked memory against thread count (the headline) -------------------
# Run "$@" in the background, sampling the kernel's view of its locked memory
# (VmLck + its perf ring mappings) every 0.1 s; sets PEAK, RC.
peak_of() {
	local pid b l m
	"$@" &
	pid=$!
	PEAK=0
	PEAK_MAPS=0
	while kill -0 "$pid" 2>/dev/null; do
		l=$(awk '/^VmLck:/ { print $2 * 1024 }' "/proc/$pid/status" 2>/dev/null)
		m=$(perf_maps_bytes "$pid")
		b=$(( m + ${l:-0} ))
		[ "$b" -gt "$PEAK" ] && PEAK=$b
		[ "$m" -gt "$PEAK_MAPS" ] && PEAK_MAPS=$m
		sleep 0.1
	done
	wait "$pid"
	RC=$?
}
section_mem() {
	local n idle thread_b ring_b bound rk_k rk_maps st pid msg
	echo
	echo "== Locked memory vs threads: N threads idle, then busy; 256 KiB per thread and event."
	echo "   ringkeeper record -p PID -e cpu-clock -m 256K (a sched and a cpu-clock file per thread),"
	echo "   budget $NCPU CPUs x one thread's files; perf record --per-thread -m 64 -e cpu-clock -p PID."
	echo "   Both as the kernel sees them: VmLck + perf ring mappings, polled every 0.1 s (ringkeeper:"
	echo "   also its own VmLck samples at every pin, the larger figure is shown)."
	printf "%-7s | %-38s | %-10s | %s\n" threads "ringkeeper (own accounting)" bound \
		"perf --per-thread"
	thread_b=$(( 2 * (256 + 4) * 1024 ))
	ring_b=$(( NCPU * (256 + 4) * 1024 ))
	bound=$(( NCPU * thread_b + ring_b ))
	for n in $NTHREADS; do
		# perf needs ~2 ms per thread to set up here: all threads must still exist then.
		idle=$(( 3000 + 4 * n ))
		start_ready "ib-rk-$n" "$B/idlebusy" -t "$n" -I "$idle" -B 300 || die "idlebusy failed"
		pid=$LAST
		peak_of "$RK" record --root "$ROOT" --session "mem-$n" -p "$pid" -e cpu-clock -m 256K \
			--mlock-kb $(( NCPU * thread_b / 1024 )) 2>"$ROOT/mem-$n.err"
		rk_maps=$PEAK_MAPS
		wait "$pid" 2>/dev/null
		st=$("$RK" stat --root "$ROOT" --json "mem-$n")
		echo "$st" >"$ROOT/mem-$n.json"
		# The loader samples its own VmLck at every pin: sharper than 0.1 s polling.
		rk_k=$(( $(jfield "$st" vmlck_peak) + rk_maps ))
		[ "$PEAK" -gt "$rk_k" ] && rk_k=$PEAK
		[ "$RC" = 0 ] || echo "   ringkeeper failed: $(head -c 200 "$ROOT/mem-$n.err")"

		start_ready "ib-perf-$n" "$B/idlebusy" -t "$n" -I "$idle" -B 300 || die "idlebusy failed"
		pid=$LAST
		peak_of perf record --per-thread -m 64 -e cpu-clock -p "$pid" -o "$ROOT/perf-$n.data" \
			2>"$ROOT/perf-$n.err"
		wait "$pid" 2>/dev/null
		msg="$(kib "$PEAK") (x$(awk -v a="$PEAK" -v b="$rk_k" 'BEGIN { printf "%.1f", b ? a / b : 0 }'))"
		if [ "$RC" != 0 ]; then
			msg="$msg, perf exited $RC: $(grep -v '^$' "$ROOT/perf-$n.err" | tail -n 1 | cut -c1-60)"
		fi
		printf "%-7s | %-38s | %-10s | %s\n" "$n" \
			"$(kib "$rk_k") ($(kib "$(jfield "$st" locked_peak)") of files)" "$(kib "$bound")" "$msg"
		rm -f "$ROOT/perf-$n.data"
	done
}

# --- 2. cost per context switch -----------------------------------------------
# One measurement: prints ns per switch of workload $1 (pingpong mode or
# "bench") under configuration $2.
workload_cmd() {
	case $1 in
	pipe | futex) echo "$B/pingpong -m $1 -n $ROUNDS" ;;
	bench) echo "taskset -c 0 perf bench sched pipe -T -l $ROUNDS" ;;
	esac
}
# ns per switch from a workload's output
ns_of() {
	awk '/ns_per_switch/ { print $2; exit }
		/usecs\/op/ { printf "%.1f\n", $1 * 1000 / 2; exit }' "$1"
}
measure() {
	local w=$1 cfg=$2 out=$ROOT/m.out cmd
	cmd=$(workload_cmd "$w")
	case $cfg in
	bare | noop | untracked | cgroup-out) $cmd >"$out" 2>&1 ;;
	tracked) "$RK" record --root "$ROOT" --session "sw-$w-$RANDOM$RANDOM" -- $cmd >"$out" 2>&1 ;;
	tracked-wakeups)
		"$RK" record --root "$ROOT" --session "swn-$w-$RANDOM$RANDOM" --wakeups -- $cmd \
			>"$out" 2>&1 ;;
	tracked-triggers)
		# Armed, never firing: delay over 10 s, blocked over 10 s, killed, exit.
		"$RK" record --root "$ROOT" --session "swt-$w-$RANDOM$RANDOM" --snapshot-dir \
			"$ROOT/snaps" --trigger delay:10000 --trigger blocked:10000 --trigger killed \
			--trigger exit -- $cmd >"$out" 2>&1 ;;
	tracked-cpuclock)
		"$RK" record --root "$ROOT" --session "swc-$w-$RANDOM$RANDOM" -e cpu-clock -- $cmd \
			>"$out" 2>&1 ;;
	tracked-dummy)
		"$RK" record --root "$ROOT" --session "swd-$w-$RANDOM$RANDOM" -e dummy -- $cmd \
			>"$out" 2>&1 ;;
	tracked-offcpu)
		"$RK" record --root "$ROOT" --session "swo-$w-$RANDOM$RANDOM" --offcpu -- $cmd \
			>"$out" 2>&1 ;;
	perf-sched) perf record -q -e sched:sched_switch -o "$ROOT/p.data" -- $cmd >"$out" 2>&1 ;;
	perf-cpuclock)
		perf record -q -e cpu-clock --per-thread -o "$ROOT/p.data" -- $cmd >"$out" 2>&1 ;;
	esac
	ns_of "$out"
}
# Make BENCH_CG (an empty cgroup v2 directory) once; false if there is no cgroup2.
bench_cgroup() {
	local mnt
	[ -n "$BENCH_CG" ] && return 0
	mnt=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/self/mounts)
	[ -n "$mnt" ] || return 1
	BENCH_CG=$mnt/rk-bench-$$
	mkdir "$BENCH_CG" || { BENCH_CG=; return 1; }
}

# One configuration's measurement of workload $1, with what it needs around
# it, into MEASURED (not through $(...): the background helpers would hold
# the substitution's pipe open).
measure_cfg() {
	local w=$1 cfg=$2 bgpid sl=
	case $cfg in
	noop) start_ready noop "$B/noop_attach" "$B/noop.bpf.o" || die "noop_attach failed" ;;
	cgroup-out)
		start_recorder "cgout-$w-$RANDOM" --cgroup "$BENCH_CG" || die "recorder failed" ;;
	untracked)
		sleep 1000 &
		sl=$!
		BG+=("$sl")
		start_recorder "untracked-$w-$RANDOM" -p "$sl" || die "recorder failed" ;;
	esac
	bgpid=${LAST:-}
	MEASURED=$(measure "$w" "$cfg")
	case $cfg in noop | untracked | cgroup-out) stop_bg "$bgpid" ;; esac
	[ -n "$sl" ] && kill "$sl" 2>/dev/null && wait "$sl" 2>/dev/null
	return 0
}
# Over repetitions 1..REPS of the caller's table val[CFG,rep]: min, median and
# max of CFG's figures (col_mmm CFG REPS), or of CFG's differences to BASE of
# the same repetition (diff_mmm CFG BASE REPS).
col_mmm() {
	local rep
	for rep in $(seq 1 "$2"); do echo "${val[$1,$rep]}"; done | awk NF | mmm
}
diff_mmm() {
	local rep
	for rep in $(seq 1 "$3"); do
		awk -v a="${val[$1,$rep]}" -v b="${val[$2,$rep]}" \
			'BEGIN { if (a != "" && b != "") printf "%.1f\n", a - b }'
	done | mmm
}
# ns per run of the sched_switch program of configuration $2 (noop, untracked,
# tracked) over workload $1, the kernel's run_time_ns / run_cnt with run-time
# stats on for that run only (statson: no sysctl changed); into MEASURED.
prog_ns() {
	local w=$1 cfg=$2 cmd sess=pt-$1-$2-$RANDOM$RANDOM out=$ROOT/pt.out sl= st
	cmd=$(workload_cmd "$w")
	MEASURED=
	case $cfg in
	noop)
		start_ready noop-st "$B/statson" "$B/noop_attach" "$B/noop.bpf.o" ||
			die "noop_attach failed"
		$cmd >"$out" 2>&1
		stop_bg "$LAST"
		MEASURED=$(awk '/^runs/ && $2 > 0 { printf "%.1f", $4 / $2 }' "$ROOT/noop-st.out")
		return 0 ;;
	untracked)
		sleep 1000 &
		sl=$!
		BG+=("$sl")
		WRAP=$B/statson start_recorder "$sess" -p "$sl" || die "recorder failed"
		$cmd >"$out" 2>&1
		stop_bg "$LAST"
		kill "$sl" 2>/dev/null
		wait "$sl" 2>/dev/null ;;
	tracked)
		"$B/statson" "$RK" record --root "$ROOT" --session "$sess" -- $cmd >"$out" 2>&1 ;;
	tracked-dummy)
		"$B/statson" "$RK" record --root "$ROOT" --session "$sess" -e dummy -- $cmd \
			>"$out" 2>&1 ;;
	tracked-offcpu)
		"$B/statson" "$RK" record --root "$ROOT" --session "$sess" --offcpu -- $cmd \
			>"$out" 2>&1 ;;
	esac
	st=$("$RK" stat --root "$ROOT" --json "$sess")
	MEASURED=$(awk -v n="$(jfield "$st" switch_prog_runs)" -v t="$(jfield "$st" switch_prog_ns)" \
		'BEGIN { if (n > 0) printf "%.1f", t / n }')
	rm -rf "${ROOT:?}/$sess"
}
# The program's own time, against the empty program's, interleaved as above.
section_progtime() {
	local w cfg rep m lo hi reps=$(( RUNS > 9 ? RUNS : 9 ))
	echo
	echo "== The sched_switch program's own time: the kernel's run_time_ns / run_cnt, run-time stats"
	echo "   on for those runs only (BPF_ENABLE_STATS; their clock reads are in every figure and"
	echo "   cancel in the differences); $reps repetitions of noop, untracked, tracked in turn;"
	echo "   'over noop' = median of (config - noop of the same repetition), min / max"
	for w in pipe futex; do
		echo "-- workload: $(workload_cmd "$w")"
		declare -A val=()
		for rep in $(seq 1 "$reps"); do
			for cfg in noop untracked tracked; do
				prog_ns "$w" "$cfg"
				val[$cfg,$rep]=$MEASURED
			done
		done
		read -r lo m hi <<<"$(col_mmm noop "$reps")"
		printf "   %-18s %s / %s / %s ns per run\n" noop "$lo" "$m" "$hi"
		for cfg in untracked tracked; do
			read -r lo m hi <<<"$(diff_mmm "$cfg" noop "$reps")"
			printf "   %-18s %+6.0f ns over noop (%+.0f / %+.0f)\n" "$cfg" "$m" "$lo" "$hi"
		done
		unset val
	done
}
section_switch() {
	local w cfg rep bare m lo hi
	local cfgs="bare noop untracked tracked tracked-cpuclock perf-sched perf-cpuclock"
	local reps=$(( RUNS > 9 ? RUNS : 9 ))
	# --cgroup with the workload outside it: an untracked-by-filter switch.
	bench_cgroup && cfgs="bare noop untracked cgroup-out tracked tracked-cpuclock perf-sched perf-cpuclock"
	echo
	echo "== Cost per context switch: two threads on CPU 0 hand a token over; ns per switch"
	echo "   $reps repetitions, each running every configuration once, in turn (bare, noop, ...,"
	echo "   then again), so drift of the machine hits all alike; 'over bare' = median over the"
	echo "   repetitions of (config - bare of the same repetition), with min and max of those"
	echo "   differences; bare itself: min / median / max ns per switch"
	echo "   noop: an empty tp_btf/sched_switch program attached (the floor of any observer);"
	echo "   untracked: ringkeeper recording another process; cgroup-out: ringkeeper --cgroup of an"
	echo "   empty cgroup (the workload is outside it); tracked: ringkeeper record -- WORKLOAD"
	for w in pipe futex bench; do
		echo "-- workload: $(workload_cmd "$w")"
		declare -A val=()
		for rep in $(seq 1 "$reps"); do
			for cfg in $cfgs; do
				measure_cfg "$w" "$cfg"
				val[$cfg,$rep]=$MEASURED
			done
		done
		read -r lo m hi <<<"$(col_mmm bare "$reps")"
		printf "   %-18s %-30s\n" config "over bare: median (min / max)"
		printf "   %-18s %s / %s / %s ns per switch\n" bare "$lo" "$m" "$hi"
		for cfg in $cfgs; do
			[ "$cfg" = bare ] && continue
			read -r lo m hi <<<"$(diff_mmm "$cfg" bare "$reps")"
			printf "   %-18s %+6.0f ns (%+.0f / %+.0f)\n" "$cfg" "$m" "$lo" "$hi"
		done
		unset val
	done
}

# Workload $1 under configurations $2 (the base) and $3 in turn, $4
# repetitions: $2's ns per switch, and $3's difference to it labelled $5.
ab_of() {
	local w=$1 base=$2 cfg=$3 reps=$4 label=$5 rep c lo m hi
	echo "-- workload: $(workload_cmd "$w")"
	declare -A val=()
	for rep in $(seq 1 "$reps"); do
		for c in "$base" "$cfg"; do
			measure_cfg "$w" "$c"
			val[$c,$rep]=$MEASURED
		done
	done
	read -r lo m hi <<<"$(col_mmm "$base" "$reps")"
	printf "   %-18s %s / %s / %s ns per switch\n" "$base" "$lo" "$m" "$hi"
	read -r lo m hi <<<"$(diff_mmm "$cfg" "$base" "$reps")"
	printf "   %-18s %+6.0f ns over %s (%+.0f / %+.0f)\n" "$label" "$m" "$base" "$lo" "$hi"
}

# What recording wakeups costs: in the pingpong workloads every switch-in
# follows a wakeup by the other thread (both traced), so tracked --wakeups
# minus tracked is the cost of one wakeup record per switch. Then the BPF
# programs' own time, as in progtime (statson, run-time stats on for the run).
section_wakeups() {
	local w cfg rep lo m hi st sess reps=$(( RUNS > 9 ? RUNS : 9 ))
	echo
	echo "== Wakeups (record --wakeups): ns per switch of ringkeeper record -- WORKLOAD without and"
	echo "   with --wakeups, $reps repetitions in turn; every switch-in here follows a wakeup by"
	echo "   the other (traced) thread; 'over tracked' = median of the differences, min / max;"
	echo "   then one run under statson: the programs' ns per run (stats' own clock reads included;"
	echo "   an empty program's is in section 2b)"
	for w in pipe futex; do
		ab_of "$w" tracked tracked-wakeups "$reps" --wakeups
		sess=wk-$w-$RANDOM$RANDOM
		"$B/statson" "$RK" record --root "$ROOT" --session "$sess" --wakeups -- \
			$(workload_cmd "$w") >"$ROOT/wk.out" 2>&1
		st=$("$RK" stat --root "$ROOT" --json "$sess")
		awk -v sn="$(jfield "$st" switch_prog_runs)" -v st="$(jfield "$st" switch_prog_ns)" \
			-v wn="$(jfield "$st" wake_prog_runs)" -v wt="$(jfield "$st" wake_prog_ns)" \
			'BEGIN { if (sn > 0 && wn > 0)
				printf "   programs: sched_switch %.0f ns per run, wakeups %.0f ns per run (%d runs)\n",
					st / sn, wt / wn, wn }'
		rm -rf "${ROOT:?}/$sess"
	done
}

# What record --offcpu costs per switch-out. In the pingpong workloads every
# switch-out is into a sleep (the token's read or futex wait), so each takes
# a user and a kernel stack. --offcpu adds a dummy event (the sideband of
# mappings) when no -e is given: its baseline is tracked with -e dummy, so
# the difference is the stacks alone. Then the sched_switch program's own
# time under statson: tracked (no --offcpu: the switch path as before),
# with -e dummy, with --offcpu.
section_offcpu() {
	local w cfg rep lo m hi reps=$(( RUNS > 9 ? RUNS : 9 ))
	echo
	echo "== Off-CPU stacks (record --offcpu): ns per switch of ringkeeper record -- WORKLOAD"
	echo "   with -e dummy (the sideband --offcpu adds) and with --offcpu (user + kernel stacks"
	echo "   at every switch-out: each is into a sleep here), $reps repetitions in turn; 'over"
	echo "   dummy' = median of the differences, min / max; then the sched_switch program's ns"
	echo "   per run (kernel run-time stats, statson), $reps repetitions in turn"
	for w in pipe futex; do
		echo "-- workload: $(workload_cmd "$w")"
		declare -A val=()
		for rep in $(seq 1 "$reps"); do
			for cfg in tracked-dummy tracked-offcpu; do
				measure_cfg "$w" "$cfg"
				val[$cfg,$rep]=$MEASURED
			done
		done
		read -r lo m hi <<<"$(col_mmm tracked-dummy "$reps")"
		printf "   %-18s %s / %s / %s ns per switch\n" "-e dummy" "$lo" "$m" "$hi"
		read -r lo m hi <<<"$(diff_mmm tracked-offcpu tracked-dummy "$reps")"
		printf "   %-18s %+6.0f ns over dummy (%+.0f / %+.0f)\n" --offcpu "$m" "$lo" "$hi"
		unset val
		declare -A val=()
		for rep in $(seq 1 "$reps"); do
			for cfg in tracked tracked-dummy tracked-offcpu; do
				prog_ns "$w" "$cfg"
				val[$cfg,$rep]=$MEASURED
			done
		done
		for cfg in tracked tracked-dummy tracked-offcpu; do
			read -r lo m hi <<<"$(col_mmm "$cfg" "$reps")"
			printf "   program, %-15s %s / %s / %s ns per run\n" "$cfg" "$lo" "$m" "$hi"
		done
		read -r lo m hi <<<"$(diff_mmm tracked-dummy tracked "$reps")"
		printf "   program, %-15s %+6.0f ns (%+.0f / %+.0f): the switch path without --offcpu\n" \
			"dummy - tracked" "$m" "$lo" "$hi"
		read -r lo m hi <<<"$(diff_mmm tracked-offcpu tracked-dummy "$reps")"
		printf "   program, %-15s %+6.0f ns (%+.0f / %+.0f): the stacks\n" \
			"offcpu - dummy" "$m" "$lo" "$hi"
		unset val
	done
}

# --- 2a. the switch cost, A/B inside one run -------------------------------------
# One within-run A/B of workload $1: "noop" (bare vs noop), "clock" (bare vs
# the empty program plus one bpf_ktime_get_ns()) or "tracked" (untracked vs
# tracked); its median B - A into MEASURED.
measure_ab() {
	local w=$1 kind=$2 out=$ROOT/ab.out
	local pp="$B/pingpong -m $w -n $AB_ROUNDS -S $AB_SEG"
	case $kind in
	noop | clock | stamp) $pp -b "$B/$kind.bpf.o" >"$out" 2>&1 ;;
	tracked) "$RK" record --root "$ROOT" --session "ab-$w-$RANDOM$RANDOM" -- $pp -t >"$out" 2>&1 ;;
	esac
	MEASURED=$(awk '/^ab_diff_ns/ { print $2; exit }' "$out")
	[ -n "$MEASURED" ] || die "pingpong -S ($kind) failed: $(tail -3 "$out")"
}
# The differences of section 2, each measured inside one run, where drift cancels.
section_switchab() {
	local w kind rep lo m mn mt hi
	local reps=$(( RUNS > 3 ? RUNS : 3 ))
	echo
	echo "== The same, A/B inside one run: pingpong -S splits $AB_ROUNDS round trips into segments of"
	echo "   $AB_SEG and flips the state between two segments (B first and last); each interior segment"
	echo "   gives B - A against the mean of its two neighbours, and a run's figure is the median of"
	echo "   those (~$(( AB_ROUNDS / AB_SEG )) segments). noop - bare: the empty program attached and"
	echo "   detached; tracked - untracked: ringkeeper records the ping-pong, and pingpong sets and"
	echo "   clears its two threads' bytes in the pinned traced map (untracked: sched_switch's early"
	echo "   return, the loader hears nothing). Median (min / max) over $reps runs, interleaved."
	echo "   untracked - noop is the program's own +~10 ns (section 2b): tracked over bare ~= the sum."
	echo "   clock - bare: the empty program plus one bpf_ktime_get_ns() (the clock every record"
	echo "   carries): what any observer that timestamps a switch pays before writing anything."
	echo "   stamp - bare: the stamp-and-store floor (tests/bench/stamp.bpf.c): the clock plus one"
	echo "   16-byte record (time, both tids) stored into a per-CPU ring in a mapped array; the"
	echo "   ratio is tracked over bare (the sum) to it: issue 41's goal is <= 1.1."
	for w in pipe futex; do
		declare -A val=()
		for rep in $(seq 1 "$reps"); do
			for kind in noop clock stamp tracked; do
				measure_ab "$w" "$kind"
				val[$kind,$rep]=$MEASURED
			done
		done
		echo "-- workload: $B/pingpong -m $w"
		read -r lo mn hi <<<"$(col_mmm noop "$reps")"
		printf "   %-22s %+6.0f ns (%+.0f / %+.0f)\n" "noop - bare" "$mn" "$lo" "$hi"
		read -r lo m hi <<<"$(col_mmm clock "$reps")"
		printf "   %-22s %+6.0f ns (%+.0f / %+.0f)\n" "clock - bare" "$m" "$lo" "$hi"
		read -r lo mt hi <<<"$(col_mmm tracked "$reps")"
		printf "   %-22s %+6.0f ns (%+.0f / %+.0f)\n" "tracked - untracked" "$mt" "$lo" "$hi"
		printf "   %-22s %+6.0f ns\n" "sum" "$(( mn + mt ))"
		read -r lo m hi <<<"$(col_mmm stamp "$reps")"
		printf "   %-22s %+6.0f ns (%+.0f / %+.0f)\n" "stamp - bare" "$m" "$lo" "$hi"
		printf "   %-22s %6s\n" "sum / (stamp - bare)" \
			"$(awk -v a="$(( mn + mt ))" -v b="$m" 'BEGIN { printf (b > 0) ? "%.2fx" : "-", a / b }')"
		unset val
	done
}

# --- 3. pin pool ----------------------------------------------------------------
pin_line() {
	local st=$1 what=$2 sw pins unpins
	sw=$(jfield "$st" switches)
	pins=$(jfield "$st" pins)
	unpins=$(jfield "$st" unpins)
	printf "   %-30s %5s already | p50 %8s ns  p99 %9s ns | %6s calls/1000 sw | locked %s of on-CPU\n" \
		"$what" "$(awk -v h="$(jfield "$st" pin_hot)" -v n="$(jfield "$st" pin_lat_n)" \
			'BEGIN { printf "%.0f%%", h + n ? h * 100 / (h + n) : 0 }')" \
		"$(jfield "$st" pin_lat_p50_ns)" "$(jfield "$st" pin_lat_p99_ns)" \
		"$(awk -v p="$pins" -v u="$unpins" -v s="$sw" 'BEGIN { printf "%.1f", s ? (p + u) * 1000 / s : 0 }')" \
		"$(awk -v a="$(jfield "$st" oncpu_pinned_ns)" -v b="$(jfield "$st" oncpu_ns)" \
			'BEGIN { printf "%.1f%%", b ? a * 100 / b : 0 }')"
}
section_pin() {
	local st n
	echo
	echo "== Pin pool: share of switch-ins whose buffer was still locked; for the others, switch-in"
	echo "   to locked (p50/p99, log buckets); mlock+munlock calls per 1000 switches (the naive"
	echo "   baseline, one of each per switch, is 2000); share of on-CPU time with the buffer locked"
	"$RK" record --root "$ROOT" --session pin-pp -- "$B/pingpong" -n "$ROUNDS" >/dev/null 2>&1
	pin_line "$("$RK" stat --root "$ROOT" --json pin-pp)" "pingpong (2 threads, 1 CPU)"
	"$RK" record --root "$ROOT" --session pin-pp0 --linger-ms 0 -- "$B/pingpong" -n "$ROUNDS" \
		>/dev/null 2>&1
	pin_line "$("$RK" stat --root "$ROOT" --json pin-pp0)" "pingpong, --linger-ms 0"
	for n in $NTHREADS; do
		[ -f "$ROOT/mem-$n.json" ] && pin_line "$(cat "$ROOT/mem-$n.json")" "idle-then-busy, $n threads"
	done
	# The loader learns of a switch-in at its next drain (--tick-ms): the latency's floor.
	for tick in 5 1; do
		start_ready "ib-tick-$tick" "$B/idlebusy" -t 256 -I 3000 -B 300 || die "idlebusy failed"
		"$RK" record --root "$ROOT" --session "tick-$tick" -p "$LAST" -e cpu-clock -m 256K \
			--tick-ms "$tick" --mlock-kb $(( NCPU * 2 * 260 )) >/dev/null 2>&1
		wait "$LAST" 2>/dev/null
		st=$("$RK" stat --root "$ROOT" --json "tick-$tick")
		pin_line "$st" "256 threads, --tick-ms $tick"
		printf "   %-30s loader CPU %s ms per s\n" "" \
			"$(awk -v c="$(jfield "$st" loader_cpu_ns)" -v d="$(jfield "$st" duration_ns)" \
				'BEGIN { x = (d > 0) ? c / (d / 1e3) : 0; printf "%.1f", x }')"
	done
	section_pin_bursts
}

# One bursts run per configuration and repetition, interleaved; prints medians.
# Each configuration: "label|record options|bursts options".
bursts_table() {
	local cfgs=("$@") rep i lbl ropt bopt st m x
	declare -A v
	for rep in $(seq 1 "$RUNS"); do
		for i in "${!cfgs[@]}"; do
			IFS='|' read -r lbl ropt bopt <<<"${cfgs[$i]}"
			# shellcheck disable=SC2086
			"$RK" record --root "$ROOT" --session "bu-$i-$rep" -m 64K --mlock-kb 4096 $ropt \
				-- "$B/bursts" $bopt >/dev/null 2>&1 || die "record of bursts $bopt failed"
			st=$("$RK" stat --root "$ROOT" --json "bu-$i-$rep")
			"$RK" rm --root "$ROOT" "bu-$i-$rep" >/dev/null 2>&1
			v[$i,locked,$rep]=$(awk -v a="$(jfield "$st" oncpu_pinned_ns)" -v b="$(jfield "$st" oncpu_ns)" \
				'BEGIN { printf "%.1f", b ? a * 100 / b : 0 }')
			v[$i,p50,$rep]=$(( $(jfield "$st" pin_lat_p50_ns) / 1000 ))
			v[$i,p99,$rep]=$(( $(jfield "$st" pin_lat_p99_ns) / 1000 ))
			v[$i,wake,$rep]=$(awk -v w="$(jfield "$st" pin_wakeups)" -v s="$(jfield "$st" switches)" \
				'BEGIN { printf "%.1f", s ? w * 1000 / s : 0 }')
			v[$i,calls,$rep]=$(awk -v p="$(jfield "$st" pins)" -v u="$(jfield "$st" unpins)" \
				-v s="$(jfield "$st" switches)" 'BEGIN { printf "%.1f", s ? (p + u) * 1000 / s : 0 }')
			v[$i,skip,$rep]=$(jfield "$st" pins_skipped_short)
			v[$i,cpu,$rep]=$(awk -v c="$(jfield "$st" loader_cpu_ns)" -v d="$(jfield "$st" duration_ns)" \
				'BEGIN { printf "%.1f", (d > 0) ? c / (d / 1e3) : 0 }')
		done
	done
	printf "   %-34s %8s %8s %9s %9s %9s %7s %8s\n" "" locked "p50 us" "p99 us" \
		"wake/1k" "calls/1k" skipped "CPU ms/s"
	for i in "${!cfgs[@]}"; do
		IFS='|' read -r lbl ropt bopt <<<"${cfgs[$i]}"
		printf "   %-34s" "$lbl"
		for m in locked p50 p99 wake calls skip cpu; do
			x=$(for rep in $(seq 1 "$RUNS"); do echo "${v[$i,$m,$rep]}"; done |
				sort -g | awk '{a[NR]=$1} END { print a[int((NR+1)/2)] }')
			[ "$m" = locked ] && x="$x%"
			printf " %8s" "$x"
		done
		echo
	done
}

section_pin_bursts() {
	echo
	echo "== Pinning that follows the thread: 6 threads, each running BURST on CPU then sleeping"
	echo "   60 ms (longer than --linger-ms 20), 3 s, -m 64K, budget 4 MiB (room for all)."
	echo "   Medians of $RUNS runs, interleaved: share of on-CPU time locked; switch-in to locked;"
	echo "   loader wakeups for a pin and mlock+munlock calls, per 1,000 switches; runs not"
	echo "   pinned (too short); loader CPU ms per s. Targets: >= 95% locked, p50 <= 100 us,"
	echo "   p99 <= 1 ms, wakeups <= calls."
	bursts_table "1 ms bursts||-t 6 -b 1000 -s 60000 -d 3000" \
		"2 ms bursts||-t 6 -b 2000 -s 60000 -d 3000" \
		"5 ms bursts||-t 6 -b 5000 -s 60000 -d 3000"
	echo
	echo "   Runs shorter than a lock is worth (100 us bursts, 30 ms sleeps): the default skips"
	echo "   them (--min-run-us 250); baselines of the same run: never lock (--min-run-us"
	echo "   1000000), lock every run (--min-run-us 0)."
	bursts_table "100 us bursts, default||-t 6 -b 100 -s 30000 -d 3000" \
		"100 us bursts, never lock|--min-run-us 1000000|-t 6 -b 100 -s 30000 -d 3000" \
		"100 us bursts, lock every run|--min-run-us 0|-t 6 -b 100 -s 30000 -d 3000"
}

# --- 4. throughput and loss -----------------------------------------------------
section_rate() {
	local max pid st secs recs t0 t1 ptimes psamples
	max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
	echo
	echo "== Throughput and loss: cpu-clock at the highest frequency allowed (-F $max), $NCPU busy"
	echo "   threads for ${RATE_SECS}s; ringkeeper -p vs perf record -p on the same workload"
	start_ready rate-rk "$B/idlebusy" -t "$NCPU" -I 0 -B $(( RATE_SECS * 1000 + 3000 )) || die "idlebusy"
	pid=$LAST
	"$RK" record --root "$ROOT" --session rate -p "$pid" -e cpu-clock -F "$max" -d "$RATE_SECS" \
		>/dev/null 2>"$ROOT/rate.err"
	st=$("$RK" stat --root "$ROOT" --json rate)
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	recs=$(jfield "$st" perf_records)
	printf "   %-12s %10s records/s drained into per-thread files; lost: %s (PERF_RECORD_LOST), %s BPF\n" \
		ringkeeper "$(( recs / RATE_SECS ))" "$(jfield "$st" perf_lost)" "$(jfield "$st" bpf_drops)"
	printf "   %-12s loader CPU %s ms per s of tracing; %s switch signals/s\n" "" \
		"$(awk -v c="$(jfield "$st" loader_cpu_ns)" -v s="$RATE_SECS" 'BEGIN { printf "%.1f", c / 1e6 / s }')" \
		"$(( $(jfield "$st" switches) / RATE_SECS ))"
	start_ready rate-perf "$B/idlebusy" -t "$NCPU" -I 0 -B $(( RATE_SECS * 1000 + 3000 )) || die "idlebusy"
	pid=$LAST
	ptimes=$( (timeout -s INT "$RATE_SECS" perf record -e cpu-clock -F "$max" -p "$pid" \
		-o "$ROOT/rate.data" >/dev/null 2>"$ROOT/rate-perf.err"; times) | tail -1)
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	psamples=$(perf report -i "$ROOT/rate.data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
	printf "   %-12s %10s samples/s written to perf.data; lost: %s; perf CPU %s\n" "perf" \
		"$(( ${psamples:-0} / RATE_SECS ))" \
		"$(perf report -i "$ROOT/rate.data" --stats 2>/dev/null | awk '/LOST events:/ { n = $3 } END { print n + 0 }')" \
		"$(awk -v t="$ptimes" -v s="$RATE_SECS" 'BEGIN { split(t, a, " "); u = a[1]; y = a[2];
			sub("s", "", u); sub("s", "", y); n = split(u, m, "m"); uu = m[1] * 60 + m[2];
			n = split(y, k, "m"); yy = k[1] * 60 + k[2]; printf "%.1f ms per s", (uu + yy) * 1000 / s }')"
}

# --- 5. scale: signals per second against thread count ----------------------
# N threads exist before -p attaches (fanout), each waking every SLEEP us for
# about 2 s, 4 of them busy. The baseline is the loader's cost per signal at
# the smallest N, measured in the same run.
section_scale() {
	local n sl iters st sig drop cpu secs t0 t1 us base="" best rate fo rk
	echo
	echo "== Scale: threads attached with -p, waking every SLEEP us for ~2 s (default sizes)"
	echo "   loader CPU counted once tracing is on (the attach, files for N threads, is apart)"
	printf "%-7s %-8s | %12s %9s %12s %11s %9s %14s\n" threads sleep "signals/s" drops \
		"loader ms/s" "us/signal" "vs ${SCALE_THREADS%% *}" "mlock+munlock" 
	printf "%-7s %-8s | %12s %9s %12s %11s %9s %14s\n" "" "" "" "" "" "" "" "per 1k signals"
	for n in $SCALE_THREADS; do
		best=0
		for sl in $SCALE_SLEEPS; do
			iters=$(( 2000000 / sl ))
			rm -f "$ROOT/fo.in"
			mkfifo "$ROOT/fo.in"
			"$B/fanout" -t "$n" -i "$iters" -s "$sl" <"$ROOT/fo.in" >"$ROOT/fo.out" &
			LAST=$!
			exec 9>"$ROOT/fo.in"
			wait_ready "$ROOT/fo.out" /dev/null || die "fanout did not start"
			fo=$LAST
			start_recorder "sc-$n-$sl" -p "$LAST" || die "recorder did not start"
			rk=$LAST
			t0=$(date +%s%N)
			echo g >&9
			exec 9>&-
			wait "$fo"
			t1=$(date +%s%N)
			wait "$rk"
			st=$("$RK" stat --root "$ROOT" --json "sc-$n-$sl")
			sig=$(jfield "$st" bpf_signals)
			drop=$(jfield "$st" bpf_drops)
			# Once tracing is on: attaching (files for the threads found) is not per signal.
			cpu=$(( $(jfield "$st" loader_cpu_ns) - $(jfield "$st" attach_cpu_ns) ))
			secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')
			us=$(awk -v c="$cpu" -v s="$sig" 'BEGIN { printf "%.2f", s ? c / 1e3 / s : 0 }')
			[ -z "$base" ] && base=$us
			rate=$(awk -v s="$sig" -v t="$secs" 'BEGIN { printf "%.0f", s / t }')
			[ "$drop" = 0 ] && [ "$rate" -gt "$best" ] && best=$rate
			printf "%-7s %-8s | %12s %9s %12.1f %11s %8.2fx %14s\n" "$n" "$sl" "$rate" "$drop" \
				"$(awk -v c="$cpu" -v t="$secs" 'BEGIN { print c / 1e6 / t }')" "$us" \
				"$(awk -v u="$us" -v b="$base" 'BEGIN { print (b > 0 ? u / b : 0) }')" \
				"$(awk -v p="$(jfield "$st" pins)" -v u="$(jfield "$st" unpins)" -v s="$sig" \
					'BEGIN { printf "%.1f", s ? (p + u) * 1000 / s : 0 }')"
			if [ "$n" = 4096 ] && [ "$sl" = "${SCALE_SLEEPS%% *}" ]; then
				MEM4096="tmpfs $(du -sk "$ROOT/sc-$n-$sl" | cut -f1) KiB" 
				MEM4096="$MEM4096 ($(( $(du -sk "$ROOT/sc-$n-$sl" | cut -f1) / n )) KiB/thread),"
				MEM4096="$MEM4096 loader peak RSS $(( $(jfield "$st" loader_rss) / 1024 )) KiB"
				MEM4096="$MEM4096 ($(( $(jfield "$st" loader_rss) / 1024 / n )) KiB/thread)"
			fi
			rm -rf "${ROOT:?}/sc-$n-$sl"
		done
		echo "        highest rate without drops at $n threads: $best signals/s"
	done
	[ -n "${MEM4096:-}" ] && echo "   memory at 4096 threads: $MEM4096"
}

# --- 6. the core handler: what it costs a crash ------------------------------
# A ~100 MB core (gcore of a process holding 100 MB) fed to the handler as the
# kernel would, into a file pattern on tmpfs: untraced (pass-through) against
# cat of the same bytes, and traced (its buffers added) against untraced.
handler_ms() {
	local pid=$1 state=$2 t0 t1
	t0=$(date +%s%N)
	env -i RINGKEEPER_COREDUMP_STATE="$state" "$RK" coredump --handle "$pid" "$pid" "$pid" \
		"$pid" 11 18446744073709551615 1700000000 0 0 1 bench hog '!bin!hog' \
		<"$ROOT/hog.core" || return 1
	t1=$(date +%s%N)
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'
}
median() { tr ' ' '\n' | awk 'NF' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
section_coredump() {
	local pid i cat_ms="" pass_ms="" traced_ms="" t0 t1 size notes sess="bench-core-$$"
	echo
	echo "== Core handler: a ~100 MB core (gcore), into a file pattern on tmpfs; ms, min / median / max"
	command -v gcore >/dev/null || { echo "   skipped: no gcore (gdb)"; return; }
	python3 -c 'import time; b = bytearray(b"x") * (100 << 20); time.sleep(120)' &
	pid=$!
	BG+=("$pid")
	sleep 1
	gcore -o "$ROOT/hog" "$pid" >/dev/null 2>&1 && mv "$ROOT/hog.$pid" "$ROOT/hog.core" ||
		{ echo "   skipped: gcore failed"; return; }
	size=$(stat -c %s "$ROOT/hog.core")
	printf 'pattern=%s/out.%%P\npipe_limit=0\n' "$ROOT" >"$ROOT/handler.state"
	for i in $(seq 1 "$RUNS"); do
		t0=$(date +%s%N)
		cat "$ROOT/hog.core" >"$ROOT/out.cat"
		t1=$(date +%s%N)
		rm -f "$ROOT/out.cat"
		cat_ms="$cat_ms $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", (b - a) / 1e6 }')"
		pass_ms="$pass_ms $(handler_ms "$pid" "$ROOT/handler.state")"
		rm -f "$ROOT/out.$pid"
	done
	# The handler finds buffers in live sessions under the default root.
	"$RK" record --session "$sess" --ready-fd 3 -p "$pid" 3>"$ROOT/cb.ready" \
		>/dev/null 2>"$ROOT/cb.err" &
	LAST=$!
	wait_ready "$ROOT/cb.ready" "$ROOT/cb.err" || die "recorder did not start"
	rec=$LAST
	for i in $(seq 1 "$RUNS"); do
		traced_ms="$traced_ms $(handler_ms "$pid" "$ROOT/handler.state")"
		notes=$(readelf -n "$ROOT/out.$pid" 2>/dev/null | grep -c RINGKEEPER)
		rm -f "$ROOT/out.$pid"
	done
	stop_bg "$rec"
	rm -rf "/dev/shm/ringkeeper/$sess"
	kill "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	printf "   core of %s MB; the traced core carried %s RINGKEEPER notes\n" "$(( size >> 20 ))" \
		"${notes:-0}"
	printf "   %-38s %s\n" "cat of the same bytes (baseline)" "$(tr ' ' '\n' <<<"$cat_ms" | awk NF | mmm)"
	printf "   %-38s %s\n" "handler, untraced (pass-through)" "$(tr ' ' '\n' <<<"$pass_ms" | awk NF | mmm)"
	printf "   %-38s %s\n" "handler, traced (its buffers added)" \
		"$(tr ' ' '\n' <<<"$traced_ms" | awk NF | mmm)"
	printf "   medians: pass-through / cat %s; traced - untraced %s ms\n" \
		"$(awk -v a="$(median <<<"$pass_ms")" -v b="$(median <<<"$cat_ms")" \
			'BEGIN { printf "%.2fx", (b > 0 ? a / b : 0) }')" \
		"$(awk -v a="$(median <<<"$traced_ms")" -v b="$(median <<<"$pass_ms")" \
			'BEGIN { printf "%+.1f", a - b }')"
	rm -f "$ROOT/hog.core"
}

# --- 7. system-wide -----------------------------------------------------------
section_system() {
	local i pids=() t0 t1 st dur cpu att sess=sys-a kb
	echo
	echo "== System-wide: record -a -d 5 over 50 processes x 40 threads already running (2 of"
	echo "   the processes with 2 busy threads each, the rest waking every 50 ms), default sizes"
	for i in $(seq 1 50); do
		"$B/fanout" -t 40 -i 400 -s 50000 -b $(( i <= 2 ? 2 : 0 )) </dev/null \
			>"$ROOT/fo-$i.out" 2>&1 &
		pids+=($!)
		BG+=($!)
	done
	for i in $(seq 1 50); do
		for _ in $(seq 1 200); do grep -q ready "$ROOT/fo-$i.out" 2>/dev/null && break; sleep 0.05; done
	done
	t0=$(date +%s%N)
	"$RK" record --root "$ROOT" --session "$sess" -a -d 5 --ready-fd 3 3>"$ROOT/$sess.ready" \
		>"$ROOT/$sess.out" 2>"$ROOT/$sess.err" &
	i=$!
	while ! grep -q ready "$ROOT/$sess.ready" 2>/dev/null; do
		kill -0 "$i" 2>/dev/null || break
		sleep 0.01
	done
	t1=$(date +%s%N)
	wait "$i" || die "record -a failed: $(cat "$ROOT/$sess.err")"
	for i in "${pids[@]}"; do kill "$i" 2>/dev/null; done
	wait 2>/dev/null
	st=$("$RK" stat --root "$ROOT" --json "$sess")
	dur=$(jfield "$st" duration_ns)
	cpu=$(jfield "$st" loader_cpu_ns)
	att=$(jfield "$st" attach_cpu_ns)
	kb=$(du -sk "$ROOT/$sess" | cut -f1)
	printf "   threads traced %s; adopted in %s ms (wall, start to tracing on; loader CPU %s ms)\n" \
		"$(jfield "$st" threads)" "$(( (t1 - t0) / 1000000 ))" "$(( att / 1000000 ))"
	printf "   locked: peak %s of a %s budget (per user); tmpfs %s KiB (%s KiB/thread)\n" \
		"$(kib "$(jfield "$st" locked_peak)")" "$(kib "$(jfield "$st" budget)")" "$kb" \
		"$(awk -v k="$kb" -v n="$(jfield "$st" threads)" 'BEGIN { printf "%.1f", n ? k / n : 0 }')"
	printf "   loader CPU after the attach: %s ms per s; signals %s/s; dropped %s (BPF) / %s lost\n" \
		"$(awk -v c="$cpu" -v a="$att" -v d="$dur" 'BEGIN { printf "%.1f", (d > 0) ? (c - a) / (d / 1e3) : 0 }')" \
		"$(awk -v s="$(jfield "$st" signals)" -v d="$dur" 'BEGIN { printf "%.0f", (d > 0) ? s / (d / 1e9) : 0 }')" \
		"$(jfield "$st" bpf_drops)" "$(jfield "$st" lost)"
	"$RK" rm --root "$ROOT" "$sess" >/dev/null 2>&1
}

# --- 8. seeing a session: export --perfetto and sched of VIEW_THREADS threads --
# A session of VIEW_THREADS threads, each born traced and waking 20 times
# (fanout), read back RUNS times by export --perfetto and by sched; the
# baseline is export --perf-data of the same session, timed alike.
section_view() {
	local sess=view i t0 t1 st pf=() sc=() pd=()
	echo
	echo "== Seeing a session of $VIEW_THREADS threads: seconds per command (wall, min / median / max"
	echo "   of $RUNS); baseline: export --perf-data of the same session"
	"$RK" record --root "$ROOT" --session "$sess" -- "$B/fanout" -t "$VIEW_THREADS" -i 20 \
		-s 100000 -b 2 </dev/null >/dev/null 2>"$ROOT/$sess.err" || die "record: $(cat "$ROOT/$sess.err")"
	st=$("$RK" stat --root "$ROOT" --json "$sess")
	for i in $(seq "$RUNS"); do
		t0=$(date +%s%N)
		"$RK" export --root "$ROOT" --session "$sess" --perf-data "$ROOT/v.data" 2>/dev/null
		t1=$(date +%s%N)
		pd+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')")
		t0=$(date +%s%N)
		"$RK" export --root "$ROOT" --session "$sess" --perfetto "$ROOT/v.pftrace" 2>/dev/null
		t1=$(date +%s%N)
		pf+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')")
		t0=$(date +%s%N)
		"$RK" sched --root "$ROOT" "$sess" >/dev/null
		t1=$(date +%s%N)
		sc+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')")
	done
	printf "   threads %s, switches recorded %s, signals dropped %s\n" "$(jfield "$st" threads)" \
		"$(jfield "$st" switches)" "$(jfield "$st" bpf_drops)"
	printf "   %-22s %s s (%s)\n" "export --perf-data" "$(printf '%s\n' "${pd[@]}" | mmm3 | tr ' ' /)" \
		"$(kib "$(stat -c %s "$ROOT/v.data")")"
	printf "   %-22s %s s (%s)\n" "export --perfetto" "$(printf '%s\n' "${pf[@]}" | mmm3 | tr ' ' /)" \
		"$(kib "$(stat -c %s "$ROOT/v.pftrace")")"
	printf "   %-22s %s s\n" "sched" "$(printf '%s\n' "${sc[@]}" | mmm3 | tr ' ' /)"
	printf "   perfetto / perf-data median: %s\n" "$(awk -v a="$(printf '%s\n' "${pf[@]}" | sort -g | \
		awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" -v b="$(printf '%s\n' "${pd[@]}" | sort -g | \
		awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}')" 'BEGIN { printf "%.2fx", (b > 0) ? a / b : 0 }')"
	rm -f "$ROOT/v.data" "$ROOT/v.pftrace"
	"$RK" rm --root "$ROOT" "$sess" >/dev/null 2>&1
}

# --- snapshots and triggers (record --trigger, ringkeeper snapshot) -------------
# A snapshot of N threads (fanout: 4 busy, the rest waking every 2 ms), its
# time and size; then a recorder with --trigger signal, SNAP_TRIGGERS SIGUSR2
# 0.3 s apart, each one's time from the signal to its line in the session's
# snapshots file; then the switch path with every trigger armed, none firing.
snap_time() {
	local n=$1 sess=snap-$1-$RANDOM t0 t1 f out=$ROOT/snap.rkb
	start_ready fanout sh -c "exec $B/fanout -t $n -i 100000 -s 2000 </dev/null" || die "fanout failed"
	local fpid=$LAST
	start_recorder "$sess" -p "$fpid" || die "recorder failed"
	local rk=$LAST
	sleep 1
	for f in 1 2 3; do
		rm -f "$out"
		t0=$(date +%s%N)
		"$RK" snapshot --root "$ROOT" -o "$out" "$sess" 2>/dev/null || die "snapshot failed"
		t1=$(date +%s%N)
		echo "$(( (t1 - t0) / 1000000 )) $(stat -c %s "$out")"
	done
	stop_bg "$rk"
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	rm -rf "${ROOT:?}/$sess" "$out"
}
section_snapshot() {
	local n rows i t0 t1 lat=() sess=trig-$RANDOM rk w rep reps=$(( RUNS > 9 ? RUNS : 9 )) lo m hi
	echo
	echo "== Snapshots: 'ringkeeper snapshot' of a running session of N threads (fanout, -m 512K),"
	echo "   3 in a row each: ms (includes the wait for the recorder's next publish, ~0.1-0.2 s),"
	echo "   and the bundle's size (symbol tables of the mapped files included)"
	for n in $NTHREADS; do
		rows=$(snap_time "$n")
		printf "   %5s threads: %s ms, %s\n" "$n" \
			"$(awk '{ print $1 }' <<<"$rows" | mmm | tr ' ' /)" \
			"$(kib "$(awk '{ print $2 }' <<<"$rows" | sort -g | tail -1)")"
	done
	echo "-- trigger to snapshot: record --trigger signal --trigger-gap 0 of fanout -t 256;"
	echo "   $SNAP_TRIGGERS SIGUSR2, 0.3 s apart; from the signal to the bundle's line in the session's"
	echo "   snapshots file (written after the bundle): ms"
	start_ready fanout sh -c "exec $B/fanout -t 256 -i 100000 -s 2000 </dev/null" || die "fanout failed"
	local fpid=$LAST
	mkdir -p "$ROOT/snaps"
	start_recorder "$sess" -p "$fpid" --trigger signal --trigger-gap 0 --snapshot-dir \
		"$ROOT/snaps" --snapshot-max 4 || die "recorder failed"
	rk=$LAST
	sleep 0.5
	for i in $(seq 1 "$SNAP_TRIGGERS"); do
		t0=$(date +%s%N)
		kill -USR2 "$rk"
		while [ "$(cat "$ROOT/$sess/snapshots" 2>/dev/null | wc -l)" -lt "$i" ]; do
			sleep 0.002
		done
		t1=$(date +%s%N)
		lat+=("$(( (t1 - t0) / 100000 ))")
		sleep 0.3
	done
	stop_bg "$rk"
	kill "$fpid" 2>/dev/null
	wait "$fpid" 2>/dev/null
	printf '%s\n' "${lat[@]}" | sort -g | awk '{ a[NR] = $1 / 10 } END {
		printf "   p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d triggers)\n",
			a[int((NR + 1) / 2)], a[int(NR * 0.99 + 0.999)], a[NR], NR }'
	rm -rf "${ROOT:?}/$sess" "$ROOT/snaps"
	echo "-- the switch path with triggers armed (delay, blocked, killed, exit; none firing):"
	echo "   ns per switch of record -- WORKLOAD without and with them, $reps repetitions in turn"
	for w in pipe futex; do
		ab_of "$w" tracked tracked-triggers "$reps" triggers
	done
	rm -rf "$ROOT/snaps"
}

# --- churn: thread births and deaths (issue 49) -----------------------------
# tests/bench/churn creates and joins CHURN_THREADS threads in a loop for
# CHURN_SECS (lifetimes/s), or fork+execs /bin/true CHURN_EXECS times; the
# tools in turn, CHURN_ROUNDS rounds, each run against bare of its round.
CHURN_SECS=${CHURN_SECS:-5}
CHURN_ROUNDS=${CHURN_ROUNDS:-3}
CHURN_THREADS=${CHURN_THREADS:-64}
CHURN_EXECS=${CHURN_EXECS:-3000}
PERF_TP="-e sched:sched_switch -e sched:sched_process_fork -e sched:sched_process_exec -e sched:sched_process_exit"

# One run of WORKLOAD ("$@") under TOOL: prints "rate cpu_us_per_life drops lost"
# (the last three "-" for bare and perf).
churn_run() {
	local tool=$1 st pid rate n cpu
	shift
	case $tool in
	bare)
		rate=$("$@" | awk '{ print $6 + 0 }') ;;
	rk|rk-g)
		if [ "$tool" = rk ]; then start_recorder churn -a || die "recorder"
		else start_recorder churn -a -e cpu-clock -F 99 -g || die "recorder"; fi
		pid=$LAST
		rate=$("$@" | awk '{ print $6 + 0 }')
		stop_bg "$pid"
		st=$("$RK" stat --root "$ROOT" --json churn)
		n=$(jfield "$st" threads)
		cpu=$(awk -v c="$(jfield "$st" loader_cpu_ns)" -v a="$(jfield "$st" attach_cpu_ns)" \
			-v n="$n" 'BEGIN { printf "%.1f", n ? (c - a) / 1e3 / n : 0 }')
		echo "$rate $cpu $(jfield "$st" bpf_drops) $(( $(jfield "$st" perf_lost) + $(jfield "$st" lost) ))"
		rm -rf "${ROOT:?}/churn"
		return ;;
	perf|perf-g)
		if [ "$tool" = perf ]; then
			# shellcheck disable=SC2086
			perf record -a $PERF_TP -o "$ROOT/churn.data" >/dev/null 2>"$ROOT/perf.err" &
		else
			perf record -a -e cpu-clock -F 99 -g -o "$ROOT/churn.data" >/dev/null 2>"$ROOT/perf.err" &
		fi
		pid=$!
		sleep 1.5
		rate=$("$@" | awk '{ print $6 + 0 }')
		stop_bg "$pid"
		n=$(perf report -i "$ROOT/churn.data" --stats 2>/dev/null | awk '/LOST events:/ { n = $3 } END { print n + 0 }')
		echo "$rate - - $n"
		rm -f "$ROOT/churn.data"
		return ;;
	esac
	echo "$rate - - -"
}

# Rounds of TOOLS over WORKLOAD ("$@"); prints each tool's ratios to the bare
# run of its round (median, min / max) and its loader CPU and losses.
churn_rounds() {
	local title=$1 tools=$2 r t line base
	shift 2
	declare -A ratios=() cpus=() drops=() lost=()
	for r in $(seq 1 "$CHURN_ROUNDS"); do
		line=$(churn_run bare "$@")
		base=${line%% *}
		for t in $tools; do
			line=$(churn_run "$t" "$@")
			read -r rate cpu d l <<<"$line"
			ratios[$t]+="$(awk -v a="$rate" -v b="$base" 'BEGIN { printf "%.3f", b ? a / b : 0 }') "
			cpus[$t]+="$cpu "
			drops[$t]+="$d "
			lost[$t]+="$l "
		done
		printf "   round %s: bare %s lifetimes/s\n" "$r" "$base"
	done
	printf "   %-8s %-34s %-16s %-10s %s\n" "$title" "ratio to bare (median, min/max)" \
		"loader us/life" "drops" "lost"
	for t in $tools; do
		printf "   %-8s %-34s %-16s %-10s %s\n" "$t" \
			"$(tr ' ' '\n' <<<"${ratios[$t]}" | grep . | sort -g | awk '{a[NR]=$1}
				END { printf "%.3f (%.3f / %.3f)", a[int((NR+1)/2)], a[1], a[NR] }')" \
			"$(tr ' ' '\n' <<<"${cpus[$t]}" | grep -v '^-*$' | mmm3 | awk '{ print $2 }')" \
			"$(echo ${drops[$t]})" "$(echo ${lost[$t]})"
	done
}

section_churn() {
	[ -x "$B/churn" ] || die "missing $B/churn: run 'make bench'"
	echo
	echo "== Churn: thread births and deaths; each tool against bare of its round ($CHURN_ROUNDS rounds)"
	echo "   threads: create and join $CHURN_THREADS threads in a loop for ${CHURN_SECS}s (lifetimes/s);"
	echo "   rk = record -a, rk-g = record -a -e cpu-clock -F 99 -g; perf = perf record -a with"
	echo "   sched_switch, fork, exec and exit tracepoints, perf-g = perf record -a -e cpu-clock -F 99 -g"
	churn_rounds threads "rk perf rk-g perf-g" "$B/churn" -t "$CHURN_THREADS" -d "$CHURN_SECS"
	echo "   exec: fork+exec /bin/true $CHURN_EXECS times, one at a time (lifetimes/s)"
	churn_rounds exec "rk perf" "$B/churn" -e "$CHURN_EXECS" /bin/true
}

# --- soak: the service's options under a steady birth rate (issue 49) --------
# SECTIONS=soak (not in the default list: 2 x SOAK_MIN minutes). record -a with
# the unit's options, churn at SOAK_RATE lifetimes/s for SOAK_MIN minutes, then
# at twice that; each minute the loader's CPU per lifetime in that minute, its
# RSS and fds, the session's files and tmpfs bytes, and the signals dropped;
# at the end, how long a SIGTERM takes to stop it under the 2x backlog.
SOAK_MIN=${SOAK_MIN:-10}
SOAK_RATE=${SOAK_RATE:-3000}
SOAK_OPTS=${SOAK_OPTS:-"-a --keep-exited 1h --max-shm 1G"}

soak_minute() {
	local rk=$1 m=$2 rate=$3 st cpu n d files bytes
	st=$("$RK" stat --root "$ROOT" --json soak)
	cpu=$(jfield "$st" loader_cpu_ns)
	n=$(jfield "$st" threads)
	d=$(jfield "$st" bpf_drops)
	files=$(find "$ROOT/soak" -type f 2>/dev/null | wc -l)
	bytes=$(du -sk "$ROOT/soak" 2>/dev/null | awk '{ print $1 * 1024 }') # held, not apparent
	printf "   %4s %6s/s %9s %9s us %8s %8s MiB %5s %9s %9s MiB\n" "$m" "$rate" \
		"$(( n - SOAK_N0 ))" \
		"$(awk -v c="$cpu" -v c0="$SOAK_C0" -v n="$n" -v n0="$SOAK_N0" \
			'BEGIN { printf "%.1f", (n > n0) ? (c - c0) / 1e3 / (n - n0) : 0 }')" \
		"$(( d - SOAK_D0 ))" \
		"$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$rk/status")" \
		"$(ls "/proc/$rk/fd" | wc -l)" "$files" \
		"$(awk -v b="${bytes:-0}" 'BEGIN { printf "%.1f", b / 1048576 }')"
	SOAK_C0=$cpu SOAK_N0=$n SOAK_D0=$d
}

section_soak() {
	local rk rate m c t0 t1
	[ -x "$B/churn" ] || die "missing $B/churn: run 'make bench'"
	echo
	echo "== Soak: record $SOAK_OPTS, churn at $SOAK_RATE lifetimes/s for $SOAK_MIN min, then at 2x"
	# shellcheck disable=SC2086
	start_recorder soak $SOAK_OPTS || die "recorder"
	rk=$LAST
	SOAK_C0=0 SOAK_N0=0 SOAK_D0=0
	printf "   %4s %8s %9s %12s %8s %12s %5s %9s %13s\n" min rate lifetimes "loader/life" \
		drops rss fds files tmpfs
	for rate in "$SOAK_RATE" "$(( 2 * SOAK_RATE ))"; do
		"$B/churn" -r "$rate" -d $(( SOAK_MIN * 60 )) >/dev/null &
		c=$!
		for m in $(seq 1 "$SOAK_MIN"); do
			sleep 60
			soak_minute "$rk" "$m" "$rate"
		done
		wait "$c"
	done
	# A backlog, then SIGTERM: how long the service's stop takes.
	"$B/churn" -r "$(( 4 * SOAK_RATE ))" -d 30 >/dev/null &
	c=$!
	sleep 20
	t0=$(date +%s%N)
	kill -TERM "$rk"
	wait "$rk" 2>/dev/null
	t1=$(date +%s%N)
	wait "$c"
	echo "   SIGTERM under a churn at $(( 4 * SOAK_RATE ))/s: stopped in $(( (t1 - t0) / 1000000 )) ms"
	rm -rf "${ROOT:?}/soak"
}

for s in $SECTIONS; do
	"section_$s"
done
