#!/bin/bash
# Write ringkeeper(8) from the binary's own help, as help2man does: every
# command's --help goes in verbatim, so the page lists exactly the options
# the binary takes (tests/integration checks that it does).
#   scripts/mkman.sh BIN OUT VERSION
set -eu
bin=$1 out=$2 version=$3

# troff-safe text: backslashes doubled, a leading . or ' escaped.
esc() { sed -e 's/\\/\\e/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

cmds=$("$bin" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{print $1} on && /^$/{exit}')
{
	echo ".TH RINGKEEPER 8 \"$(date -u +%Y-%m-%d -d @"${SOURCE_DATE_EPOCH:-$(date +%s)}")\" \"ringkeeper $version\" \"System Administration\""
	echo ".SH NAME"
	echo "ringkeeper \\- per-thread flight recorder: eBPF-driven trace ring buffers, one per thread"
	echo ".SH SYNOPSIS"
	echo ".B ringkeeper"
	echo ".I COMMAND"
	echo "[\\fIOPTIONS\\fR]"
	echo ".br"
	echo ".B ringkeeper help"
	echo ".I COMMAND"
	echo ".br"
	echo ".B ringkeeper --version"
	echo ".SH DESCRIPTION"
	"$bin" --help | awk '/^Commands:/{exit} NR>2' | esc
	echo ".PP"
	echo "Commands:"
	"$bin" --help | awk '/^Commands:/{on=1; next} on && /^  [a-z]/{c=$1; $1=""; sub(/^ /,""); printf "%s\t%s\n", c, $0} on && /^$/{exit}' |
		while IFS=$'\t' read -r c d; do
			echo ".TP"
			echo ".B $c"
			echo "$d" | esc
		done
	echo ".SH COMMANDS"
	for c in $cmds; do
		echo ".SS $c"
		echo ".nf"
		"$bin" "$c" --help 2>&1 | esc
		echo ".fi"
	done
	echo ".SH JSON OUTPUT"
	echo "With \\fB--json\\fR, each command prints one JSON document; its schema"
	echo "(JSON Schema 2020-12, also tests/schema/ in the source tree, against which"
	echo "the tests validate every output) follows. Addresses and other values that"
	echo "may pass 2^53 are hex strings; wall-clock times are UTC strings; fields"
	echo "ending in _ns are CLOCK_MONOTONIC times or durations in nanoseconds."
	for f in "$(dirname "$0")"/../tests/schema/*.json; do
		echo ".SS $(basename "$f" .json) --json"
		echo ".nf"
		# A file without a final newline must not glue ".fi" to its last line.
		{ cat "$f"; [ -z "$(tail -c 1 "$f")" ] || echo; } | esc
		echo ".fi"
	done
	cat <<'EOF'
.SH EXAMPLES
Trace a command from its first instruction, with who woke each thread and
sampled call chains; then list, summarize and read it:
.PP
.nf
.RS
ringkeeper record --wakeups -e cpu-clock -g -- ./server --port 8080
ringkeeper ls
ringkeeper sched
ringkeeper show 4242
ringkeeper show -e cpu-clock 4242
.RE
.fi
.PP
Trace a running process for 30 seconds, then hand it to perf and Perfetto:
.PP
.nf
.RS
ringkeeper record -p 4242 -d 30 --session web
ringkeeper export --session web --perf-data web.data
perf script -i web.data; perf sched timehist -i web.data
ringkeeper export --session web --perfetto web.pftrace   # ui.perfetto.dev
.RE
.fi
.PP
Always on: every new thread of the machine, exited threads' files kept for
an hour and within a quarter of /dev/shm (the defaults with -a), crashes
carrying their histories into cores:
.PP
.nf
.RS
ringkeeper coredump --install
ringkeeper record -a --keep-exited 1h
ringkeeper show --core /var/crash/core.server.4242 4243
.RE
.fi
.PP
After a recorder was killed, take its session over (its BPF programs went on):
.PP
.nf
.RS
ringkeeper record --resume-or-start -a
.RE
.fi
.PP
See what BPF holds (with \fB--keep\fR, also after the recording):
.PP
.nf
.RS
bpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info
.RE
.fi
.SH FILES
.TP
.I /dev/shm/ringkeeper/SESSION/
a session: \fBstat\fR (counters), \fBsched/TID\fR and \fBEVENT/TID\fR (one
buffer file per thread and source, page 0 as the "perf: detached events" RFC
lays it out), \fBsideband/PID\fR (mappings, comm, fork and exit records of a
process), \fBtracing_data\fR (tracepoint formats), \fBcrashes\fR (what the
core handler saw).
.TP
.I /sys/fs/bpf/ringkeeper/
the pinned maps (\fBpmu_info\fR, \fBcounters\fR, \fBsignals\fR) and links
while a recorder runs or after \fB--keep\fR or a crash; inspect with
\fBbpftool map dump pinned /sys/fs/bpf/ringkeeper/pmu_info\fR.
.TP
.I /run/ringkeeper/coredump.state
what \fBcoredump --install\fR saved: the previous core_pattern and
core_pipe_limit.
.TP
.I /var/lib/ringkeeper/crashes/
notes-only cores of traced processes that crashed under ulimit -c 0.
.SH EXIT STATUS
0 on success, 1 when the command failed, 2 for a usage error.
\fBstat\fR says whether the session's recorder is healthy: 0 running and
nothing lost, 3 running with losses, 4 no recorder running (ended or
dead-loader).
\fBrecord -- CMD\fR exits with CMD's status: its exit code, 128 + the signal
that killed it, 127 if CMD was not found and 126 if it could not be run.
.SH SEE ALSO
.BR perf-record (1),
.BR perf-script (1),
.BR bpftool-map (8),
.BR core (5),
.BR systemd-coredump (8)
EOF
} >"$out"
