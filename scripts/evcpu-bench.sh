#!/bin/bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Per-switch cost of -e cpu-clock -F 99 -g: per task (today's -- CMD and the old -a) vs per CPU
# (the new -a, --cgroup). pingpong -m pipe on CPU 0, ns per switch; configs interleaved per rep.
# usage: flock /tmp/rk-test.lock scripts/evcpu-bench.sh NEW_RK OLD_RK build/bench/pingpong REPS
# (OLD_RK: a build from before per-CPU events, for the per-task -a/--cgroup rows; needs root,
# perf and a cgroup2 mount at /sys/fs/cgroup/unified)
NEW=$1 OLD=$2 PP=$3 REPS=${4:-5}
ROOT=/dev/shm/rk-evcpu-bench; rm -rf $ROOT; mkdir -p $ROOT
CG=/sys/fs/cgroup/unified/rk-evcpu-bench-$$; mkdir -p $CG
EV="-e cpu-clock -F 99 -g"
N=100000
run_pp() { "$@" $PP -m pipe -n $N 2>/dev/null | awk '/ns_per_switch/{print $2}'; }
bg_rk() { # $1 binary, rest: options; waits until ready
	local b=$1; shift
	rm -f $ROOT/ready; "$b" record --root $ROOT --session s$RANDOM$RANDOM "$@" --ready-fd 3 3>$ROOT/ready >/dev/null 2>$ROOT/rk.err &
	BGP=$!
	for i in $(seq 300); do grep -q ready $ROOT/ready 2>/dev/null && return; sleep 0.05; done
	echo "recorder not ready: $(cat $ROOT/rk.err)" >&2
}
stop_bg() { kill -INT $BGP; wait $BGP 2>/dev/null; rm -rf $ROOT/s*; }
cfgs="bare cmd-task all-sched all-task-old all-cpu-new cg-task-old cg-cpu-new perf-a"
declare -A v
for rep in $(seq $REPS); do
	for c in $cfgs; do
		case $c in
		bare) x=$(run_pp) ;;
		cmd-task) x=$("$NEW" record --root $ROOT --session c$RANDOM $EV -- $PP -m pipe -n $N 2>/dev/null | awk '/ns_per_switch/{print $2}'); rm -rf $ROOT/c* ;;
		all-sched) bg_rk "$NEW" -a; x=$(run_pp); stop_bg ;;
		all-task-old) bg_rk "$OLD" -a $EV; x=$(run_pp); stop_bg ;;
		all-cpu-new) bg_rk "$NEW" -a $EV; x=$(run_pp); stop_bg ;;
		cg-task-old) bg_rk "$OLD" --cgroup $CG $EV; x=$(run_pp sh -c "echo \$\$ > $CG/cgroup.procs; exec \"\$0\" \"\$@\""); stop_bg ;;
		cg-cpu-new) bg_rk "$NEW" --cgroup $CG $EV; x=$(run_pp sh -c "echo \$\$ > $CG/cgroup.procs; exec \"\$0\" \"\$@\""); stop_bg ;;
		perf-a) perf record -q -a $EV -o $ROOT/p.data >/dev/null 2>&1 & BGP=$!; sleep 1; x=$(run_pp); kill -INT $BGP; wait $BGP 2>/dev/null ;;
		esac
		v[$c,$rep]=$x
	done
	echo "rep $rep: $(for c in $cfgs; do printf '%s=%s ' $c ${v[$c,$rep]}; done)"
done
rmdir $CG
echo "over bare, median (min / max) of per-rep differences, ns per switch:"
for c in $cfgs; do
	[ $c = bare ] && continue
	for rep in $(seq $REPS); do awk -v a=${v[$c,$rep]} -v b=${v[bare,$rep]} 'BEGIN{printf "%.1f\n", a-b}'; done | sort -n | awk -v c=$c '{x[NR]=$1} END{printf "  %-14s %+7.0f (%+.0f / %+.0f)\n", c, x[int((NR+1)/2)], x[1], x[NR]}'
done
for rep in $(seq $REPS); do echo ${v[bare,$rep]}; done | sort -n | awk '{x[NR]=$1} END{printf "  bare           %.0f ns per switch (median)\n", x[int((NR+1)/2)]}'
rm -rf $ROOT
