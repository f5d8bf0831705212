#!/bin/bash
# Runs inside the virtme-ng guest: load/attach check, then the portability tests.
#   scripts/vmtest-guest.sh BUILD_DIR [peer|nopeer]
set -u
build=$1 peer=${2:-peer}
kver=$(uname -r)
booted=$(cut -d' ' -f1 /proc/uptime)
cs=$(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null)
echo "vmtest-guest: kernel $kver up after ${booted}s (guest clock), clocksource ${cs:-unknown}"
mountpoint -q /dev/shm 2>/dev/null || { mkdir -p /dev/shm && mount -t tmpfs tmpfs /dev/shm; }
export RK_BIN=$build/ringkeeper RK_WORKLOAD=$build/tests/workload RK_CRASHER=$build/tests/crasher
# RK_SLOW: an emulated CPU (TCG), no timing bounds. RK_VMTEST: a test may leave
# out what only reads back files our code wrote (the same on every kernel).
export RK_BURSTS=$build/bench/bursts RK_SLOW=1 RK_VMTEST=1

# The BPF programs must load and attach; if not, show why (the verifier log).
if ! out=$("$RK_BIN" record --root /dev/shm/rk-vmtest --session load --wakeups \
	--trigger delay:1000 --trigger killed --snapshot-dir /dev/shm/rk-vmtest-snaps --offcpu \
	-- /bin/true 2>&1); then
	echo "$out" | tail -60
	echo "vmtest-guest: FAIL: ringkeeper's BPF programs do not load/attach on $kver"
	exit 1
fi
echo "vmtest-guest: BPF programs load and attach on $kver"

# Load/attach, sched_switch signals, fork inheritance, exit, the map, the pin
# budget, one perf source (a tracepoint) and exec; root-owned files with an
# ACL, a SIGBUS survived, a setuid exec continued root-only, and a crash
# seen by the signal_deliver hook, frozen and put in the core (and a
# multi-threaded crash with cpu-clock -g: every history ends at the crash),
# the wakeup programs (--wakeups: sched_waking, sched_wakeup_new),
# threads renamed after birth (task_rename), and credential and dumpability
# changes without exec (task storage, mm flags of both layouts), and a
# switch-in waking the loader for a lock (the mmap-able pin_asked array);
# -a and --cgroup (adoption at fork and exec, tp_btf/cgroup_attach_task); the
# recorder exempt from the OOM killer (the guests have CAP_SYS_RESOURCE);
# record --trigger killed (tp_btf/signal_generate) and its snapshot; record
# --offcpu (bpf_get_stack at a switch-out and a wakeup, the stack rings;
# its paranoid test stays on the host: in a TCG guest the setpriv'ed
# workload may be gone before its exec is handled, and a task already gone
# stays root's, so its file is not the user's; its show test too: in the
# 6.12 guest 1 of 54 stacks lacked the thread's own frames, not yet
# understood); off-CPU time by stack equal to sched's sleeping time, and
# bcc's offcputime against --offcpu (the guest kernels' headers are next to
# their modules: scripts/vmtest.sh; not with nopeer); the recorder's threads at
# SCHED_FIFO and a busy workload losing no signal (on PREEMPT_RT too).
tests='@(record/launch_traces_every_thread_from_birth|record/wakeups_are_recorded_in_time_order|record/the_recorder_is_exempt_from_the_oom_killer_and_cmd_is_not|record/attach_pid_traces_threads_and_processes_born_after|record/pmu_info_map_matches_the_files|record/locked_memory_stays_within_budget_with_200_threads|record/exec_is_recorded_and_tracing_continues|perf/tracepoint_samples_per_thread|hostile/user_cannot_touch_files_and_root_mistakes_cost_one_file|hostile/setuid_exec_continues_in_a_root_only_file|coredump/through_the_kernel_a_traced_crash_carries_its_frozen_history|coredump/through_the_kernel_a_segfault_ends_every_thread_history_at_the_crash|coredump/through_the_kernel_a_crash_storm_loses_no_core|lifecycle/resume_of_an_e_session_goes_on_sampling|record/renamed_threads_carry_their_new_names|record/a_rename_storm_is_rate_limited_per_thread_and_keeps_the_last_name|hostile/credential_changes_without_exec_follow_the_proc_rule|record/a_thread_is_locked_while_it_runs_and_wakeups_are_few|system/cgroup_traces_what_is_inside_and_moves_in_not_what_stays_out|system/all_traces_processes_born_later_not_kthreads_nor_itself|trigger/a_sigkilled_process_leaves_a_snapshot_with_every_thread_s_last_switch|offcpu/folded_time_is_sched_sleeping_time|offcpu/per_stack_totals_agree_with_bcc_offcputime|record/the_loop_and_pin_workers_run_sched_fifo_and_the_command_does_not|threads/a_thread_whose_end_was_dropped_is_ended_while_recording|coredump/through_the_kernel_a_clone_fs_sibling_does_not_steer_a_relative_core)'
# nopeer: not bcc's offcputime, which compiles its program inside the guest
# (clang under TCG: 60 s to past the suite's 240 s, most of a guest's time);
# scripts/vmtest.sh runs it in one guest. Its stack source is the same BPF
# code in every guest.
[ "$peer" = nopeer ] && tests=${tests/|offcpu\/per_stack_totals_agree_with_bcc_offcputime/}
# Comparisons with peers' tools (perf beside the recorder: ~30 s under TCG) run in
# the peer guest only, as bcc's; the others check what holds on any kernel.
[ "$peer" = nopeer ] && export RK_VMTEST_NOPEER=1

# A watchdog: when the tests print nothing for 150 s (a test hung: Criterion
# kills it at its timeout and says no more), what every task was doing then,
# printed once per hang: the processes with their scheduling class and wait
# channel, the kernel stacks of the tests' descendants, and the kernel's own
# list of blocked tasks (sysrq w). Then the next failure says where it hung.
watchdog() {
	local out=$1 last=0 size seen=0 now
	while sleep 10; do
		size=$(stat -c %s "$out" 2>/dev/null || echo 0)
		now=$(date +%s)
		if [ "$size" != "$seen" ]; then
			seen=$size last=$now
			continue
		fi
		[ $((now - last)) -ge 150 ] || continue
		last=$now
		echo "vmtest-guest: watchdog: no test output for 150 s; the tasks now:"
		ps -eLo pid,tid,ppid,cls,rtprio,stat,wchan:28,etimes,args --sort=pid | grep -v ' \[.*\]$' | cut -c1-200 |
			sed 's/^/vmtest-guest: watchdog: /'
		for t in /proc/[0-9]*/task/[0-9]*; do
			grep -qE '^State:\s+[DR]' "$t/status" 2>/dev/null || continue
			echo "vmtest-guest: watchdog: ${t#/proc/} $(tr '\0' ' ' <"${t%/task/*}/cmdline" | cut -c1-80) state $(awk '/^State/{print $2}' "$t/status"):"
			sed 's/^/vmtest-guest: watchdog:     /' "$t/stack" 2>/dev/null
		done
		echo w >/proc/sysrq-trigger 2>/dev/null &&
			dmesg | tail -120 | sed 's/^/vmtest-guest: watchdog: dmesg: /'
	done
}
start=$(date +%s)
out=/dev/shm/vmtest-guest-tests.out
: >"$out"
watchdog "$out" &
wd=$!
"$build/tests/integration_tests" --jobs 1 --verbose --filter "$tests" 2>&1 |
	grep --line-buffered -vE '^\[----\] (Criterion|Running)' | tee "$out"
rc=${PIPESTATUS[0]}
kill "$wd" 2>/dev/null
echo "vmtest-guest: tests on $kver took $(($(date +%s) - start))s, exit $rc"
exit "$rc"
