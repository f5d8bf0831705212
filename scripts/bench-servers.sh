# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# bench-servers.sh - make bench SECTIONS=servers: real servers under load,
# bare and under each tracer, in interleaved repetitions. Sourced by
# scripts/bench.sh (its ROOT, RK, NCPU, start_recorder, stop_bg, jfield, BG).
#
#   SERVER_REPS=5 SERVER_SECS=5 SERVERS="redis nginx postgres" \
#   SERVER_CONFIGS="bare rk-a rk-a-wakeups rk-a-e perf-switch perf-g" \
#   SERVER_BARE_EACH=1  SECTIONS=servers scripts/bench.sh
#
# SERVER_BARE_EACH=1: a bare run before every other run (and one at the end),
# and each run also set against the mean of the bare runs either side of it:
# a drift slower than two runs cancels (on this VM bare's throughput moved by
# a third within a minute). Twice the runs for the same SERVER_REPS.
#
# The servers come from Debian (redis-server + redis-tools, nginx-light +
# wrk, postgresql + pgbench), installed here, for the bench only, when
# missing; a server that cannot be had is skipped with the reason.

SERVER_REPS=${SERVER_REPS:-5}
SERVER_SECS=${SERVER_SECS:-5}
SERVERS=${SERVERS:-"redis nginx postgres"}
SERVER_CONFIGS=${SERVER_CONFIGS:-"bare rk-a rk-a-wakeups rk-a-e perf-switch perf-g"}
SERVER_BARE_EACH=${SERVER_BARE_EACH:-0}

# What each configuration runs during the load (empty: nothing).
srv_tracer_desc() {
	case $1 in
	bare) echo "no tracer" ;;
	rk-a) echo "ringkeeper record -a" ;;
	rk-a-wakeups) echo "ringkeeper record -a --wakeups" ;;
	rk-a-e) echo "ringkeeper record -a -e cpu-clock -F 99 -g" ;;
	perf-switch) echo "perf record -a -e sched:sched_switch" ;;
	perf-g) echo "perf record -a -F 99 -g" ;;
	esac
}

# Install the packages a server needs, once; Return: 0 if its programs are there.
srv_have() {
	local bins pkgs b missing=
	case $1 in
	redis) bins="redis-server redis-benchmark" pkgs="redis-server redis-tools" ;;
	nginx) bins="nginx wrk" pkgs="nginx-light wrk" ;;
	postgres) bins="pgbench" pkgs="postgresql postgresql-contrib" ;;
	esac
	for b in $bins; do command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || missing=1; done
	[ "$1" = postgres ] && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && missing=1
	[ -z "$missing" ] && return 0
	echo "   installing $pkgs (for this bench only)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs \
		>"$SRV/apt-$1.log" 2>&1 || {
		SRV_WHY="cannot install $pkgs: $(tail -1 "$SRV/apt-$1.log")"
		return 1
	}
	for b in $bins; do command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] ||
		{ SRV_WHY="$b still missing after installing $pkgs"; return 1; }; done
}

# --- the servers: start, one load of SERVER_SECS (its throughput on stdout), stop ---
srv_start_redis() {
	redis-server --port 0 --unixsocket "$SRV/redis.sock" --save '' --appendonly no \
		--io-threads 1 >"$SRV/redis.log" 2>&1 &
	SRV_PID=$!
	BG+=("$SRV_PID")
	for _ in $(seq 1 100); do [ -S "$SRV/redis.sock" ] && return 0; sleep 0.05; done
	SRV_WHY="redis-server did not start: $(tail -1 "$SRV/redis.log")"
	return 1
}
srv_load_redis() {
	# -n sized to take about SERVER_SECS at bare speed (measured by the first bare run).
	redis-benchmark -s "$SRV/redis.sock" -c 50 -n "${REDIS_N:-200000}" -t get,set -P 1 \
		--csv 2>/dev/null | awk -F'","' '/^"(GET|SET)/ { s += $2; n++ } END { if (n) printf "%.0f\n", s / n }'
}
srv_stop_redis() { kill "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; rm -f "$SRV/redis.sock"; }

srv_start_nginx() {
	mkdir -p "$SRV/nginx/html" "$SRV/nginx/tmp"
	head -c 4096 /dev/urandom | base64 >"$SRV/nginx/html/index.html"
	cat >"$SRV/nginx/nginx.conf" <<EOF
worker_processes 2;
pid $SRV/nginx/nginx.pid;
error_log $SRV/nginx/error.log;
daemon off;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $SRV/nginx/tmp;
	proxy_temp_path $SRV/nginx/tmp;
	fastcgi_temp_path $SRV/nginx/tmp;
	uwsgi_temp_path $SRV/nginx/tmp;
	scgi_temp_path $SRV/nginx/tmp;
	server { listen 127.0.0.1:18080; root $SRV/nginx/html; }
}
EOF
	nginx -c "$SRV/nginx/nginx.conf" -p "$SRV/nginx" >"$SRV/nginx/out.log" 2>&1 &
	SRV_PID=$!
	BG+=("$SRV_PID")
	for _ in $(seq 1 100); do
		curl -sf -o /dev/null http://127.0.0.1:18080/ 2>/dev/null && return 0
		wget -q -O /dev/null http://127.0.0.1:18080/ 2>/dev/null && return 0
		sleep 0.05
	done
	SRV_WHY="nginx did not start: $(tail -1 "$SRV/nginx/error.log" 2>/dev/null)"
	return 1
}
srv_load_nginx() {
	wrk -t 2 -c 32 -d "${SERVER_SECS}s" http://127.0.0.1:18080/ 2>/dev/null |
		awk '/^Requests\/sec:/ { printf "%.0f\n", $2 }'
}
srv_stop_nginx() { kill -QUIT "$SRV_PID" 2>/dev/null; wait "$SRV_PID" 2>/dev/null; }

srv_start_postgres() {
	local bin
	bin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
	PG_BIN=$bin
	mkdir -p "$SRV/pg" && chown postgres: "$SRV/pg" && chmod 700 "$SRV/pg"
	if [ ! -f "$SRV/pg/data/PG_VERSION" ]; then
		runuser -u postgres -- "$bin/initdb" -D "$SRV/pg/data" -A trust >"$SRV/pg/initdb.log" 2>&1 ||
			{ SRV_WHY="initdb failed: $(tail -1 "$SRV/pg/initdb.log")"; return 1; }
	fi
	runuser -u postgres -- "$bin/pg_ctl" -D "$SRV/pg/data" -l "$SRV/pg/log" -w \
		-o "-k $SRV/pg -p 15432 -c listen_addresses='' -c fsync=off -c shared_buffers=128MB" \
		start >/dev/null 2>&1 || { SRV_WHY="postgres did not start: $(tail -1 "$SRV/pg/log")"; return 1; }
	SRV_PID=$(head -1 "$SRV/pg/data/postmaster.pid")
	if [ ! -f "$SRV/pg/.init" ]; then
		runuser -u postgres -- pgbench -h "$SRV/pg" -p 15432 -i -s 10 postgres \
			>"$SRV/pg/pgbench-i.log" 2>&1 || { SRV_WHY="pgbench -i failed"; return 1; }
		touch "$SRV/pg/.init"
	fi
}
srv_load_postgres() {
	runuser -u postgres -- pgbench -h "$SRV/pg" -p 15432 -S -c 8 -j 2 -T "$SERVER_SECS" postgres \
		2>/dev/null | awk '/^tps = / { printf "%.0f\n", $3 }'
}
srv_stop_postgres() {
	runuser -u postgres -- "$PG_BIN/pg_ctl" -D "$SRV/pg/data" -m fast -w stop >/dev/null 2>&1
}

# --- the tracers: start one (TRACER_PID), stop it with its figures on stdout ---
# "cpu_ms signals drops": the tracer's CPU over the run, its signals (ringkeeper) and drops.
srv_tracer_start() {
	TRACER_PID=
	case $1 in
	bare) return 0 ;;
	rk-a) start_recorder srv -a ;;
	rk-a-wakeups) start_recorder srv -a --wakeups ;;
	rk-a-e) start_recorder srv -a -e cpu-clock -F 99 -g ;;
	perf-switch | perf-g)
		local args="-e sched:sched_switch"
		[ "$1" = perf-g ] && args="-F 99 -g"
		# perf says nothing when ready: its control fifo's ack does.
		rm -f "$ROOT/perf.ctl" "$ROOT/perf.ack"
		mkfifo "$ROOT/perf.ctl" "$ROOT/perf.ack"
		perf record -a $args -o "$ROOT/srv.data" -D -1 \
			--control "fifo:$ROOT/perf.ctl,$ROOT/perf.ack" >"$ROOT/perf.out" 2>"$ROOT/perf.err" &
		LAST=$!
		BG+=("$LAST")
		exec 8>"$ROOT/perf.ctl" 9<"$ROOT/perf.ack"
		echo enable >&8
		read -r -t 30 _ <&9 || { cat "$ROOT/perf.err" >&2; return 1; }
		;;
	esac
	TRACER_PID=$LAST
}
srv_cpu_ms() {
	awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f\n", ($14 + $15) * 1000 / hz }' "/proc/$1/stat" 2>/dev/null
}
srv_tracer_stop() {
	local cpu st
	[ -z "$TRACER_PID" ] && { echo "0 - -"; return; }
	cpu=$(srv_cpu_ms "$TRACER_PID")
	case $1 in
	rk-*)
		stop_bg "$TRACER_PID"
		st=$("$RK" stat --root "$ROOT" --json srv 2>/dev/null)
		echo "$(($(jfield "$st" loader_cpu_ns) / 1000000)) $(jfield "$st" signals)" \
			"$(($(jfield "$st" bpf_drops) + $(jfield "$st" lost) + $(jfield "$st" perf_lost)))"
		"$RK" rm --root "$ROOT" srv >/dev/null 2>&1
		;;
	perf-*)
		exec 8>&- 9<&-
		stop_bg "$TRACER_PID"
		# perf's own count of lost events (the LOST records of its rings).
		echo "${cpu:-0} - $(perf report -i "$ROOT/srv.data" --stats 2>/dev/null |
			awk '/LOST / { s += $NF } END { print s + 0 }')"
		rm -f "$ROOT/srv.data" "$ROOT/srv.data.old"
		;;
	esac
}

# One server: SERVER_REPS rounds, each round every configuration once, the
# order rotated each round (no configuration always first or last).
srv_bench_one() {
	local srv=$1 cfgs=($SERVER_CONFIGS) rep i c k tp fig n=${#cfgs[@]}
	SRV_WHY=
	if ! srv_have "$srv" || ! "srv_start_$srv"; then
		echo "   $srv: SKIPPED: $SRV_WHY"
		return
	fi
	# A warm-up, not counted; for redis it sizes -n to about SERVER_SECS.
	tp=$("srv_load_$srv")
	[ "$srv" = redis ] && REDIS_N=$(( ${tp:-40000} * SERVER_SECS / 2 ))
	SRV_SEQ=0
	for rep in $(seq 1 "$SERVER_REPS"); do
		for i in $(seq 0 $((n - 1))); do
			c=${cfgs[$(((i + rep) % n))]}
			if [ "$SERVER_BARE_EACH" = 1 ]; then
				[ "$c" = bare ] && continue
				srv_run_one "$srv" bare "$rep"
			fi
			srv_run_one "$srv" "$c" "$rep"
		done
	done
	[ "$SERVER_BARE_EACH" = 1 ] && srv_run_one "$srv" bare "$SERVER_REPS"
	"srv_stop_$srv"
	srv_table "$srv"
}

# One run of configuration C in round REP: its line in srv-SERVER.runs (config,
# throughput, CPU ms, signals, drops, the run's number in the whole order, round).
srv_run_one() {
	local srv=$1 c=$2 rep=$3 tp fig
	SRV_SEQ=$((SRV_SEQ + 1))
	srv_tracer_start "$c" || { echo "   $srv: $c did not start" >&2; return; }
	tp=$("srv_load_$srv")
	fig=$(srv_tracer_stop "$c")
	echo "$c ${tp:-0} $fig $SRV_SEQ $rep" >>"$ROOT/srv-$srv.runs"
}

# The table of one server: per configuration, throughput ratio to bare's
# median (median, min, max), its spread, tracer CPU per second, signals, drops;
# then each configuration's ratio to bare of the same round (paired: drift
# slower than a round cancels), and ringkeeper's rows to perf's of the same
# round. SERVER_RUNS_DIR=DIR keeps every run's figures (srv-SERVER.runs: config,
# throughput, CPU ms, signals, drops, round).
srv_table() {
	local srv=$1 c base
	[ -n "${SERVER_RUNS_DIR:-}" ] && cp "$ROOT/srv-$srv.runs" "$SERVER_RUNS_DIR/"
	base=$(awk '$1 == "bare" { print $2 }' "$ROOT/srv-$srv.runs" | sort -g |
		awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')
	printf "   %s: bare median %s %s (%s runs of %s s per configuration)\n" "$srv" "$base" \
		"$([ "$srv" = postgres ] && echo tps || echo req/s)" "$SERVER_REPS" "$SERVER_SECS"
	printf "   %-44s %7s %7s %7s %9s %11s %7s\n" "configuration" "median" "min" "max" \
		"CPU ms/s" "signals/s" "drops"
	for c in $SERVER_CONFIGS; do
		awk -v c="$c" -v b="$base" -v s="$SERVER_SECS" -v d="$(srv_tracer_desc "$c")" '
			$1 == c { r[++n] = $2 / b; cpu += $3; if ($4 != "-") sig += $4; else nosig = 1
				  if ($5 != "-") drops += $5; else nodrop = 1 }
			END {
				if (!n) exit
				for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
					if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
				printf "   %-44s %7.3f %7.3f %7.3f %9.0f %11s %7s\n", d, r[int((n + 1) / 2)],
					r[1], r[n], cpu / n / s, nosig ? "-" : sprintf("%.0f", sig / n / s),
					nodrop ? "-" : drops
			}' "$ROOT/srv-$srv.runs"
	done
	echo "   paired, each run against another of the same round: median (min / max, rounds)"
	srv_paired "$srv" bare "rk-a rk-a-wakeups rk-a-e perf-switch perf-g"
	srv_paired "$srv" perf-switch "rk-a rk-a-wakeups"
	srv_paired "$srv" perf-g "rk-a-e"
	[ "$SERVER_BARE_EACH" = 1 ] || return 0
	echo "   each run against the mean of the bare runs either side of it: median (min / max, runs)"
	srv_neighbours "$srv" "rk-a rk-a-wakeups rk-a-e perf-switch perf-g"
}

# SERVER_BARE_EACH: each run of CFGS against the mean of the bare runs just
# before and after it in the whole order (field 6); a run without both, or
# with a failed load, is skipped.
srv_neighbours() {
	local srv=$1 c
	for c in $2; do
		awk -v c="$c" -v d="$(srv_tracer_desc "$c") / bare either side" "$SRV_SAY"'
			{ name[$6] = $1; tp[$6] = $2 }
			END {
				for (k in name) {
					if (name[k] != c || tp[k] <= 0) continue
					if (name[k - 1] != "bare" || name[k + 1] != "bare") continue
					if (tp[k - 1] <= 0 || tp[k + 1] <= 0) continue
					r[++n] = 2 * tp[k] / (tp[k - 1] + tp[k + 1])
				}
				say(d, r, n)
			}' "$ROOT/srv-$srv.runs"
	done
}
# awk: one line of ratios R[1..N], D its description: median (min / max, N).
SRV_SAY='function say(d, r, n,   i, j, t) {
	if (!n) return
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
		if (r[j] < r[i]) { t = r[i]; r[i] = r[j]; r[j] = t }
	printf "   %-70s %6.3f (%.3f / %.3f, %d)\n", d, r[int((n + 1) / 2)], r[1], r[n], n
}
'
# Ratios of each of CFGS to BASE of the same round (its last field; a round missing
# either, or where either load failed, is skipped).
srv_paired() {
	local srv=$1 base=$2 c
	for c in $3; do
		awk -v c="$c" -v b="$base" -v d="$(srv_tracer_desc "$c") / $(srv_tracer_desc "$base")" "$SRV_SAY"'
			$1 == b { bt[$NF] = $2 } $1 == c { ct[$NF] = $2 }
			END {
				for (k in ct) if ((k in bt) && bt[k] > 0 && ct[k] > 0) r[++n] = ct[k] / bt[k]
				say(d, r, n)
			}' "$ROOT/srv-$srv.runs"
	done
}

section_servers() {
	local s
	# The servers' own files: readable by their users (www-data, postgres), unlike ROOT.
	SRV=$(mktemp -d /dev/shm/rk-srv.XXXXXX)
	chmod 755 "$SRV"
	echo
	echo "== Real servers: throughput under each tracer, as a ratio to bare (median of bare"
	echo "   runs); $SERVER_REPS interleaved rounds, the order rotated each round; client and"
	echo "   server on the same $NCPU CPUs. CPU ms/s: the tracer's (ringkeeper: the loader's own"
	echo "   count; perf: /proc utime+stime); drops: ringkeeper's BPF drops + lost records,"
	echo "   perf's LOST events"
	for s in $SERVERS; do
		srv_bench_one "$s"
	done
	rm -rf "${SRV:?}"
}
