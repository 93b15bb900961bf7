#!/usr/bin/env bash
# The window's waits, measured on the real window (ui.Run through
# ui/internal/devrun) under Xvfb with software OpenGL, driven with xdotool
# and loaded with hsload. Prints its numbers as plain text on stdout (make
# bench puts them under "### Window" in docs/benchmarks.md); progress goes
# to stderr.
#
# How it measures: HOOKSCOPE_UI_TRACE=1 makes the window write a line when
# it paints a clicked delivery's detail and when it paints a new header
# count (ui/trace.go: a 1x1 raster in each pane, whose generator runs in
# the frame that draws it). The script writes the wall clock just before
# each xdotool click, so "click to drawn" includes X, the event loop and
# the paint. RSS is VmRSS from /proc.
#
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, xprop, python3, curl.
#
#   WINDOW_BENCH_DISPLAY  X display to start Xvfb on (default :98)
#   WINDOW_BENCH_PORT     the window's receiver port (default 18580; +1 is pprof)
#   WINDOW_BENCH_RATE     deliveries/s of the load (default 100)
#   WINDOW_BENCH_SECONDS  seconds of load with clicks (default 60)
#   WINDOW_BENCH_TOTAL    live deliveries for the memory target (default 10000)
#   WINDOW_BENCH_MORE     deliveries after that, to see memory stay flat (default 5000)
#   WINDOW_BENCH_KEEP     a folder to copy the window's trace and the click times into
set -euo pipefail
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
export LANG=en_US.UTF-8 CGO_ENABLED=1
display=${WINDOW_BENCH_DISPLAY:-:98}
port=${WINDOW_BENCH_PORT:-18580}
rate=${WINDOW_BENCH_RATE:-100}
secs=${WINDOW_BENCH_SECONDS:-60}
total=${WINDOW_BENCH_TOTAL:-10000}
more=${WINDOW_BENCH_MORE:-5000}
url="http://127.0.0.1:$port/webhooks"
tmp=$(mktemp -d)
xvfb= app= load= listen=
cleanup() {
	for p in $load $listen $app $xvfb; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	if [ -n "${WINDOW_BENCH_KEEP:-}" ]; then cp "$tmp/trace.log" "$tmp/clicks" "$WINDOW_BENCH_KEEP/" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
say() { echo "bench-window: $*" >&2; }
now() { date +%s%N; }
rss() { awk '/^VmRSS/{printf "%.0f", $2/1024}' "/proc/$app/status"; }
stored() { python3 -c 'import sqlite3,sys; print(sqlite3.connect("file:"+sys.argv[1]+"?mode=ro", uri=True).execute("select count(*) from deliveries").fetchone()[0])' "$tmp/hooks.db"; }

say "building the window and hsload"
go build -tags "$TAGS" -o "$tmp/devrun" ./ui/internal/devrun
go build -tags "$TAGS" -o "$tmp/hsload" ./internal/prove/cmd/hsload
go build -tags "$TAGS" -o "$tmp/hookscope" .

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
sleep 1
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display HOOKSCOPE_UI_TRACE=1 \
	"$tmp/devrun" --db "$tmp/hooks.db" --addr "127.0.0.1:$port" >"$tmp/trace.log" 2>&1 &
app=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.2; done
sleep 3
shown=$(rss)
# The smallest the window lets itself be made: the minimum size it gives
# the window manager (Xvfb has none to enforce it on xdotool).
minsize() {
	local wid
	wid=$(DISPLAY=$display xdotool search --name '^Hookscope$' | head -1)
	DISPLAY=$display xprop -id "$wid" WM_NORMAL_HINTS | awk '/minimum size/{print $5 "x" $7}'
}
smallest_empty=$(minsize)
load_start=$(cut -d' ' -f1-3 /proc/loadavg)

# Rows of the default 1280x800 window, the newest first (under the search,
# the quick filters, the expression, the count and the actions rows).
row() { echo $((405 + 60 * ($1 - 1))); }
click() { # click ROW: the wall clock, then the click
	echo "click $(now)" >>"$tmp/clicks"
	DISPLAY=$display xdotool mousemove 300 "$(row "$1")" click 1
}

# 1. Memory with live deliveries, nothing clicked: what the window holds
# for the deliveries it was shown (a detail opened adds its texts' textures
# for a minute).
left=$((total - $(stored)))
if ((left > 0)); then
	say "load: $left more deliveries at $rate/s"
	"$tmp/hsload" run --url "$url" --rate "$rate" --duration "$(((left + rate - 1) / rate))s" --warmup 0s --concurrency 8 >/dev/null
fi
sleep 5
n2=$(stored); rss2=$(rss)
if ((more > 0)); then
	say "load: $more more deliveries at $rate/s"
	"$tmp/hsload" run --url "$url" --rate "$rate" --duration "$(((more + rate - 1) / rate))s" --warmup 0s --concurrency 8 >/dev/null
	sleep 5
fi
n3=$(stored); rss3=$(rss)

# 2. Large events: a 301 KB media.translation_created (3,800 lines of
# transcript) and a 5 MB media.updated (one 5 MiB string).
python3 - "$tmp" <<'EOF'
import json, sys, random, string
random.seed(7)
def words(n):
    return " ".join("".join(random.choice(string.ascii_lowercase) for _ in range(random.randint(2, 9))) for _ in range(n))
def msg(i, typ, payload):
    return {"hook": {"uuid": "%032x" % i}, "events": [{"uuid": "%032x" % (i + 100), "type": typ,
        "generated_at": "2026-11-25T10:00:00Z", "metadata": {"account_id": "acc1"}, "payload": payload}]}
media = lambda i: {"id": "m%d" % i, "name": "Talk %d" % i, "url": "https://example.com/m%d" % i, "duration": 12.5, "thumbnail": {"url": "https://example.com/t.jpg"}}
t = {"hashed_id": "t1", "iso639_2_language_code": "fra", "language_code": "fr", "language_name": "French",
     "language_native_name": "Français", "transcript_text": "\n".join(words(12) for _ in range(3800))}
open(sys.argv[1] + "/translation.json", "w").write(json.dumps(msg(1, "media.translation_created", {"media": media(1), "project": {"id": "p", "name": "P"}, "transcript": t})))
open(sys.argv[1] + "/small.json", "w").write(json.dumps(msg(3, "media.ready", {"media": media(3)})))
open(sys.argv[1] + "/updated.json", "w").write(json.dumps(msg(2, "media.updated", {"media": media(2), "project": {"id": "p", "name": "P"}, "previous_attributes": {"description": words(900000)[:5 << 20]}})))
EOF
for f in translation updated; do
	curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$tmp/$f.json" "$url"
done
sleep 2
big() { # big ROW NAME: click, then the peak RSS growth over 3 s
	local before peak r
	before=$(rss); peak=$before
	: >"$tmp/clicks"
	click "$1"
	for _ in $(seq 60); do r=$(rss); ((r > peak)) && peak=$r; sleep 0.05; done
	local c d
	c=$(awk '{print $2}' "$tmp/clicks")
	d=$(grep -o 'drawn id=[0-9]* unix_ns=[0-9]*' "$tmp/trace.log" | awk -F= -v c="$c" '$3 > c {print $3; exit}')
	if [ -n "$d" ]; then
		echo "  $2: $(((d - c) / 1000000)) ms, +$((peak - before)) MB"
	else
		echo "  $2: not drawn within 3 s, +$((peak - before)) MB"
	fi
}
big_rows=$(
	big 2 "301 KB media.translation_created, 3,800-line transcript"
	big 1 "5 MB media.updated, one 5 MiB string"
)
sleep 35 # one memory trim (ui.trimMemory)
rss_big=$(rss)

# click_latency reads the clicks and the window's trace: click to drawn.
click_latency() {
	python3 - "$tmp/trace.log" "$tmp/clicks" <<'EOF'
import re, sys
ev = []
for line in open(sys.argv[1]):
    m = re.match(r"hookscope-trace (select|drawn) id=\d+ unix_ns=(\d+)", line)
    if m: ev.append((int(m.group(2)), m.group(1)))
clicks = [int(l.split()[1]) for l in open(sys.argv[2])]
lat, missed, untaken = [], 0, 0
for i, c in enumerate(clicks):
    nxt = clicks[i + 1] if i + 1 < len(clicks) else float("inf")
    win = [(t, k) for t, k in ev if c < t < nxt]
    if not any(k == "select" for t, k in win):
        untaken += 1
        continue
    d = [t for t, k in win if k == "drawn"]
    if d: lat.append((d[0] - c) / 1e6)
    else: missed += 1
lat.sort()
q = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
print("%d clicks: median %.0f ms, p95 %.0f ms, max %.0f ms; %d not drawn before the next click; %d on the selected row" % (len(lat), q(0.5), q(0.95), lat[-1] if lat else float("nan"), missed, untaken))
EOF
}

# 3. A clicked row under load, and the header's count after it.
say "load: $rate/s for ${secs}s, clicking a row every 1.5 s"
: >"$tmp/clicks"
"$tmp/hsload" run --url "$url" --rate "$rate" --duration "${secs}s" --warmup 0s --concurrency 8 >"$tmp/load1.json" &
load=$!
rss_load=()
start=$(now)
i=0
while kill -0 "$load" 2>/dev/null; do
	click $((2 + i % 3))
	i=$((i + 1))
	sleep 1.5
	if ((i % 10 == 0)); then rss_load+=("$(rss)"); fi
done
wait "$load" || true
load=
ended=$(now)
n1=$(stored)
sleep 5
count_lag=$(python3 - "$tmp/trace.log" "$ended" "$n1" <<'EOF'
import re, sys
ended, want = int(sys.argv[2]), int(sys.argv[3])
for line in open(sys.argv[1]):
    m = re.match(r"hookscope-trace counts deliveries=(\d+) unix_ns=(\d+)", line)
    if m and int(m.group(1)) >= want:
        lag = (int(m.group(2)) - ended) / 1e6
        print("%d ms" % lag if lag > 0 else "0 ms (drawn before hsload had exited)"); break
else:
    print("not shown within 5 s")
EOF
)
clicks=$(click_latency)
rss_after_load=$(rss)

# 3b. The same with a multi-selection: Ctrl+A (every delivery the filter
# shows) before each click, which the click then clears.
say "load: $rate/s for $((secs / 2))s, Ctrl+A then a click every 1.5 s"
: >"$tmp/clicks"
"$tmp/hsload" run --url "$url" --rate "$rate" --duration "$((secs / 2))s" --warmup 0s --concurrency 8 >/dev/null &
load=$!
i=0
while kill -0 "$load" 2>/dev/null; do
	DISPLAY=$display xdotool key ctrl+a
	sleep 0.5
	click $((2 + i % 3))
	i=$((i + 1))
	sleep 1
done
wait "$load" || true
load=
clicks_multi=$(click_latency)

# 4. Another process on the store: `hookscope listen --db` on the window's
# file; each delivery it stores, until the window's header counts it.
lport=$((port + 2))
"$tmp/hookscope" listen --db "$tmp/hooks.db" --addr "127.0.0.1:$lport" >"$tmp/listen.log" 2>&1 &
listen=$!
for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$lport) 2>/dev/null && break; sleep 0.2; done
: >"$tmp/sent"
for _ in $(seq 10); do
	echo "$(now) $(($(stored) + 1))" >>"$tmp/sent"
	curl -s -o /dev/null -H 'Content-Type: application/json' --data-binary @"$tmp/small.json" "http://127.0.0.1:$lport/webhooks"
	sleep 1.5
done
kill "$listen"; wait "$listen" 2>/dev/null || true
listen=
other=$(python3 - "$tmp/trace.log" "$tmp/sent" <<'EOF'
import re, sys
shown = []
for line in open(sys.argv[1]):
    m = re.match(r"hookscope-trace counts deliveries=(\d+) unix_ns=(\d+)", line)
    if m: shown.append((int(m.group(1)), int(m.group(2))))
lat = []
for l in open(sys.argv[2]):
    t, n = map(int, l.split())
    hit = [s for c, s in shown if c >= n and s > t]
    lat.append((hit[0] - t) / 1e6 if hit else float("inf"))
lat.sort()
print("%d deliveries: median %.0f ms, max %.0f ms" % (len(lat), lat[len(lat) // 2], lat[-1]))
EOF
)

# 5. The smallest window, with deliveries and one open.
smallest=$(minsize)

cat <<EOF
The real window under Xvfb 1280x800 (Mesa llvmpipe: software OpenGL), ui.Run via ui/internal/devrun
on a fresh store; clicks with xdotool; load from hsload run (signed ~2.5 KB deliveries, ${rate}/s, open
loop). Click to drawn: the wall clock just before the xdotool click to the paint of the detail pane
(HOOKSCOPE_UI_TRACE). Load average at start: $load_start; at the end: $(cut -d' ' -f1-3 /proc/loadavg).

Memory with live deliveries at ${rate}/s, nothing clicked (target: < 250 MB after 10,000, then flat):
  window shown ${shown} MB; after $n2 deliveries ${rss2} MB; after $n3 ${rss3} MB
Large events, click to Events tab drawn (target < 500 ms) and peak RSS growth over 3 s (target < 100 MB):
$big_rows
  with the 5 MB delivery open, 35 s later: ${rss_big} MB (receiving it is the receiver's memory too)
A row clicked every 1.5 s during ${secs} s of ${rate}/s (target: median < 200 ms, p95 < 500 ms):
  $clicks
  with a Ctrl+A selection made before each click ($((secs / 2)) s): $clicks_multi
  RSS meanwhile $(IFS=/; echo "${rss_load[*]:-?}") MB, after it ${rss_after_load} MB (a detail opened keeps its texts' textures a minute)
The header's count after the load stopped ($n1 stored; target: within 1 s): $count_lag after the last answer
Deliveries stored by another process (listen --db on the window's store), until the header counts them
(target: within 1 s): $other
The smallest window (target: 960x640 or less): empty $smallest_empty; with deliveries and one open $smallest
EOF
