#!/bin/sh
# Demo: record a multi-threaded workload (8 threads + a child process with 8
# more, born after the recording starts), look at the live pmu_info map with
# bpftool, then list, count and print what was recorded.
#   scripts/demo.sh RINGKEEPER-BINARY WORKLOAD-BINARY
set -eu
rk=$1
wl=$2
session=demo-$(date +%Y%m%d-%H%M%S)
fifo=$(mktemp -u /tmp/ringkeeper-demo.XXXXXX)
mkfifo "$fifo"
trap 'rm -f "$fifo"' EXIT

echo "== ringkeeper record --session $session -- workload -t 8 -i 200 -s 2000 -f"
# fd 3 is the ready pipe: ringkeeper writes "ready" once tracing is on.
"$rk" record --session "$session" --ready-fd 3 -- "$wl" -t 8 -i 200 -s 2000 -f \
	3>"$fifo" >/dev/null &
pid=$!
read -r ready <"$fifo" || true
[ "$ready" = ready ] || { wait "$pid"; exit 1; }
# Wait (bounded) until the threads exist, then show the map as bpftool sees it.
i=0
while [ "$(ls /dev/shm/ringkeeper/"$session"/sched 2>/dev/null | wc -l)" -lt 18 ] && [ $i -lt 100 ]; do
	sleep 0.05; i=$((i + 1))
done
echo
echo "== bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info (first entry)"
bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info | sed -n '1,/"wakeup_events"/p' | head -40
echo "   ... ($(bpftool -j map dump pinned /sys/fs/bpf/ringkeeper/pmu_info | grep -o '"tid":' | wc -l) entries: one per live traced thread)"
wait "$pid"
echo
echo "== ringkeeper ls $session"
"$rk" ls "$session"
echo
echo "== ringkeeper stat $session"
"$rk" stat "$session"
tid=$(ls /dev/shm/ringkeeper/"$session"/sched | sort -n | sed -n 2p)
echo
echo "== ringkeeper show $tid (first 12 records)"
"$rk" show --session "$session" "$tid" | head -16
echo
echo "Files stay in /dev/shm/ringkeeper/$session (rm -r it when done)."
