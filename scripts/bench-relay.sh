#!/usr/bin/env bash
# The relay's part of `make bench` (scripts/bench.sh runs it; its output goes
# under "### Relay" in docs/benchmarks.md). Plain text:
#
#   1. the answer's latency at 500 and 1,000 deliveries/s (hsload run, open
#      loop, ~2.5 KB signed messages): `hookscope listen` (SQLite, fsync per
#      commit), `hookscope relay --sync always` (fsync per delivery) and
#      `hookscope relay` (the default --sync, 1s), one after another in the
#      same run, each fresh;
#   2. a laptop catching up on 100,000 deliveries into its SQLite store
#      (BenchmarkRelayCatchUp in station/, real stations);
#   3. the live lag relay -> laptop store at 500/s (BenchmarkRelayLiveLag).
#
#   BENCH_SECONDS            seconds of each load in 1 (default 60)
#   HOOKSCOPE_BENCH_CATCHUP  deliveries in 2 (default 100000)
set -euo pipefail
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
export LANG=en_US.UTF-8 LC_ALL= CGO_ENABLED=1
secs=${BENCH_SECONDS:-60}
catchup=${HOOKSCOPE_BENCH_CATCHUP:-100000}
tmp=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	rm -rf "$tmp"
}
trap cleanup EXIT
load() { cut -d' ' -f1-3 /proc/loadavg; }
field() { grep -o "\"$1\":[0-9.a-z]*" "$2" | head -1 | cut -d: -f2; }
met() { awk -v v="$1" -v t="$2" -v dir="${3:-lt}" 'BEGIN{ok = (dir == "lt" ? v < t : v >= t); print (ok ? "met" : "NOT MET")}'; }

go build -tags "$TAGS" -o "$tmp/hookscope" .
go build -o "$tmp/hsload" ./internal/prove/cmd/hsload
export HSBENCH_SECRET=bench-secret HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/home/config"
mkdir -p "$HOME"

start_bg() { # start_bg VAR OUTFILE CMD...: run CMD in the background, set VAR to its URL once it listens
	"${@:3}" >"$2" 2>"$2.err" &
	pids+=($!)
	local u=""
	for _ in $(seq 300); do
		u=$(grep -o '"listening":"[^"]*"' "$2" 2>/dev/null | head -1 | cut -d'"' -f4 || true)
		[ -n "$u" ] && break
		sleep 0.1
	done
	[ -n "$u" ] || { echo "bench-relay: $3 did not start: $(cat "$2.err")" >&2; return 1; }
	printf -v "$1" '%s' "$u"
}
stop_bg() { for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; pids=(); }

echo "1. Answer latency, open loop, ${secs} s each, from when each request was due (load average before: $(load))"
echo
printf '%-6s  %-28s  %8s  %8s  %8s  %s\n' "rate/s" "receiver" "p50 ms" "p99 ms" "max ms" "answered 200"
for rate in 500 1000; do
	for who in listen relay-always relay; do
		rm -rf "$tmp/store.db"* "$tmp/relay-data"
		case $who in
		listen) start_bg url "$tmp/$who.out" "$tmp/hookscope" listen --addr 127.0.0.1:0 --json --secret-env HSBENCH_SECRET --db "$tmp/store.db" ;;
		relay-always) start_bg url "$tmp/$who.out" "$tmp/hookscope" relay --addr 127.0.0.1:0 --json --secret-env HSBENCH_SECRET --data "$tmp/relay-data" --sync always ;;
		relay) start_bg url "$tmp/$who.out" "$tmp/hookscope" relay --addr 127.0.0.1:0 --json --secret-env HSBENCH_SECRET --data "$tmp/relay-data" ;;
		esac
		"$tmp/hsload" run --url "$url" --secret-env HSBENCH_SECRET --rate "$rate" --concurrency 64 --duration "${secs}s" 2>/dev/null | tail -1 >"$tmp/r.json"
		stop_bg
		name=$who
		case $who in
		listen) name="listen (SQLite)" ;;
		relay-always) name="relay --sync always" ;;
		relay) name="relay (default --sync 1s)" ;;
		esac
		printf '%-6s  %-28s  %8s  %8s  %8s  %s of %s\n' "$rate" "$name" "$(field p50_ms "$tmp/r.json")" "$(field p99_ms "$tmp/r.json")" \
			"$(field max_ms "$tmp/r.json")" "$(field ok "$tmp/r.json")" "$(field requests "$tmp/r.json")"
		printf '%s %s %s\n' "$rate" "$who" "$(field p99_ms "$tmp/r.json")" >>"$tmp/p99"
	done
done
echo
echo "Load average after: $(load)."
echo

echo "2. Catch-up: a laptop that slept through ${catchup} deliveries (load average before: $(load))"
echo
HOOKSCOPE_BENCH_CATCHUP=$catchup go test -tags "$TAGS" -count=1 -run '^$' -bench RelayCatchUp -benchtime 1x -timeout 30m ./station/ 2>&1 |
	grep -E '^(Benchmark|FAIL|---)' | tee "$tmp/catchup.out"
echo
echo "3. Live lag relay -> laptop store at 500/s for ${secs} s (load average before: $(load))"
echo
go test -tags "$TAGS" -count=1 -run '^$' -bench RelayLiveLag -benchtime "$((500 * secs))x" -timeout 30m ./station/ 2>&1 |
	grep -E '^(Benchmark|FAIL|---)' | tee "$tmp/lag.out"
echo
metric() { awk -v m="$1" '{for (i = 2; i < NF; i++) if ($(i+1) == m) print $i}' "$2" | head -1; }
rate=$(metric deliveries/s "$tmp/catchup.out")
reports=$(metric progress-reports "$tmp/catchup.out")
lag=$(metric lag-p99-ms "$tmp/lag.out")
echo "Targets:"
for r in 500 1000; do
	p=$(awk -v r="$r" '$1 == r && $2 == "relay" {print $3}' "$tmp/p99")
	a=$(awk -v r="$r" '$1 == r && $2 == "relay-always" {print $3}' "$tmp/p99")
	l=$(awk -v r="$r" '$1 == r && $2 == "listen" {print $3}' "$tmp/p99")
	echo "  relay ack p99 < 25 ms at ${r}/s: ${p} ms with the default --sync: $(met "${p:-999}" 25) (--sync always ${a} ms, listen ${l} ms)"
done
echo "  catch-up >= 3,000/s with progress: ${rate:-?}/s, ${reports:-0} progress reports: $(met "${rate:-0}" 3000 ge)"
echo "  live lag p99 < 100 ms at 500/s: ${lag:-?} ms: $(met "${lag:-999}" 100)"
echo
echo "Load average after: $(load)."
