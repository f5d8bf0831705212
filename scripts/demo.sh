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

echo "== ringkeeper record --session $session --wakeups -e cpu-clock -F 999 -g -- workload -t 8 -i 200 -s 2000 -l 100000 -f"
# fd 3 is the ready pipe: ringkeeper writes "ready" once tracing is on.
"$rk" record --session "$session" --wakeups -e cpu-clock -F 999 -g --ready-fd 3 -- \
	"$wl" -t 8 -i 200 -s 2000 -l 100000 -f 3>"$fifo" >/dev/null &
pid=$!
read -r ready <"$fifo" || true
[ "$ready" = ready ] || { wait "$pid"; exit 1; }
# Wait (bounded) until the threads exist, then show the map as bpftool sees it.
i=0
while [ "$(ls /dev/shm/ringkeeper/"$session"/sched 2>/dev/null | wc -l)" -lt 18 ] && [ $i -lt 100 ]; do
	sleep 0.05; i=$((i + 1))
done
echo
echo "== bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info (its first entry, in short)"
dump=$(bpftool -j map dump pinned /sys/fs/bpf/ringkeeper/pmu_info)
# The fields that say what the entry is; 'bpftool map dump pinned ...' prints it whole.
echo "$dump" | python3 -c '
import json, sys
e = json.load(sys.stdin)[0]["formatted"]
k, v = e["key"], e["value"]
a = v["attr"]
print("   key {tid %d, src %d}: info {note_size %d, pmu_descsz %d}, attr {type %d, config %d, sample_type %#x, ...}"
      % (k["tid"], k["src"], v["info"]["note_size"], v["info"]["pmu_descsz"], a["type"], a["config"], a["sample_type"]))
' 2>/dev/null || echo "   (bpftool's JSON has another shape here: bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info)"
entries=$(echo "$dump" | grep -o '"tid":[0-9]*' | wc -l)
threads=$(echo "$dump" | grep -o '"tid":[0-9]*' | sort -u | wc -l)
echo "   ... ($entries entries: one per live traced thread and source, $threads threads x sched and cpu-clock)"
wait "$pid"
echo
echo "== ringkeeper ls $session"
"$rk" ls "$session"
echo
echo "== ringkeeper stat $session (its head; every counter follows it)"
"$rk" stat "$session" | sed -n '1,/COUNTER/p' | grep -v COUNTER
tid=$(ls /dev/shm/ringkeeper/"$session"/sched | sort -n | tail -1)
echo
echo "== ringkeeper show $tid (first 12 records)"
"$rk" show --session "$session" "$tid" | head -16
echo
echo "== ringkeeper show --session $session -e cpu-clock $tid (first samples)"
"$rk" show --session "$session" -e cpu-clock "$tid" | sed -n '5,20p'
out=/tmp/ringkeeper-$session.data
echo
echo "== ringkeeper export --session $session --perf-data $out; perf report --stdio"
"$rk" export --session "$session" --perf-data "$out"
if command -v perf >/dev/null 2>&1; then
	perf report -i "$out" --stdio --no-children --sort comm,dso,sym 2>/dev/null | grep -v '^$' | head -25
fi
echo
echo "== ringkeeper sched $session (per-thread scheduling summary; the child process's threads)"
child=$(ls /dev/shm/ringkeeper/"$session"/sideband | sort -n | tail -1)
"$rk" sched "$session" --pid "$child"
trace=/tmp/ringkeeper-$session.pftrace
echo
echo "== ringkeeper export --session $session --perfetto $trace (open it in ui.perfetto.dev)"
"$rk" export --session "$session" --perfetto "$trace"
# The same trace as the Perfetto UI draws it, here: a local copy of the UI
# (PyPI) in headless Chromium (make deps), when both could be installed.
png=/tmp/ringkeeper-$session.png
repo=$(cd "$(dirname "$0")/.." && pwd)
venv=$repo/build/perfetto-venv
"$repo/scripts/perfetto-venv.sh" "$venv" >/dev/null 2>&1 || true
echo
if [ -x "$venv/bin/python" ] && [ -f "$venv/ui/index.html" ] && command -v chromium >/dev/null &&
	"$venv/bin/python" "$repo/scripts/perfetto-ui.py" --screenshot "$png" "$trace"; then
	echo "== the Perfetto UI's picture of it: $png"
else
	png=
	echo "== no picture: the Perfetto UI or chromium could not be installed (scripts/perfetto-venv.sh)"
fi
echo
echo "Files stay in /dev/shm/ringkeeper/$session, $out, $trace${png:+ and $png} (remove them when done)."
