#!/usr/bin/env bash
# Runs the real Hookscope window under Xvfb with a throw-away store, sends
# simulated deliveries, and saves a PNG of each view into docs/.
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick, python3.
set -euo pipefail
# Build tags: the Makefile exports them; run directly, read them from it.
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=${SHOTS_DISPLAY:-:99}
# SHOTS_PORT keeps 8787 free (CI's smoke test); the docs show 8787.
port=${SHOTS_PORT:-8787}
# The developer's app the Forward shots forward to (scripts/shots-app.py).
app_port=${SHOTS_APP_PORT:-3300}
bin="$tmp/hookscope"
cli="$tmp/hookscope-cli"
export LANG=en_US.UTF-8
go build -tags "$TAGS" -o "$bin" ./ui/internal/devrun
go build -tags "$TAGS" -o "$cli" .

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
app=
second=
devapp=
cleanup() {
	[ -n "$app" ] && kill "$app" 2>/dev/null || true
	[ -n "$devapp" ] && kill "$devapp" 2>/dev/null || true
	[ -n "$second" ] && kill "$second" 2>/dev/null || true
	kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sleep 1

shot() { DISPLAY=$display import -window root "$out/$1.png"; echo "saved $out/$1.png"; }
shot960() { DISPLAY=$display import -window root -crop 960x640+0+0 +repage "$out/$1.png"; echo "saved $out/$1.png"; }
click() { DISPLAY=$display xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.7}"; }

start() { # $1: theme (light|dark)
	HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME="$1" \
		WEBHOOK_SECRET=demo-secret "$bin" --db "$tmp/hooks.db" --secret-env WEBHOOK_SECRET --addr "127.0.0.1:$port" >"$tmp/app.log" 2>&1 &
	app=$!
	for _ in $(seq 50); do
		# a bare TCP connect: an HTTP probe would be recorded as a delivery
		(exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null && break
		sleep 0.2
	done
	sleep 1.5
}
stop() { kill "$app"; wait "$app" 2>/dev/null || true; app=; sleep 1; }

start light
shot ui-empty
WEBHOOK_SECRET=demo-secret "$bin" --secret-env WEBHOOK_SECRET send "http://127.0.0.1:$port/webhooks"
sleep 1.5
# Coordinates are for the default 1280x800 window at the screen's origin:
# a three-row header, list rows 60 px apart from y=405 (under the search,
# quick filters, expression, count and actions rows), the detail's tabs at
# y=274, the window's tabs at y=155 (Deliveries, Re-sends, OAuth, Settings).
click 300 465   # the divergent duplicate (second newest)
shot ui-deliveries
click 1213 569  # Full diff… on its card
shot ui-full-diff
click 639 680   # Close (the dialog is centred: not moved by the header)
click 685 274   # JSON tab
shot ui-json
click 800 274   # Headers tab
shot ui-headers
click 300 405   # the newest: signed with the wrong key
click 883 274   # Signature tab
shot ui-signature
click 737 274   # Raw tab
shot ui-raw
click 277 155   # Settings tab (fourth)
shot ui-settings
click 191 662   # Answer rules: the 500 preset adds the rule "500"
click 73 734    # Save settings (the tab's footer: at the bottom)
shot ui-answer-mode
click 1247 659  # back to 200, for the runs below: delete rule 1 (the Answers row pushed it down)
click 73 734
# A second window on the same port: the first one holds it.
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME=light \
	"$bin" --db "$tmp/second.db" --addr "127.0.0.1:$port" >"$tmp/second.log" 2>&1 &
second=$!
sleep 3
shot ui-port-taken
kill "$second"; wait "$second" 2>/dev/null || true; second=

# Forwarding: the app is down (the header says so), then back.
click 45 155    # Deliveries tab
click 500 105   # Forward to
DISPLAY=$display xdotool type --delay 5 "http://localhost:$app_port/webhooks"
DISPLAY=$display xdotool key Return # Enter turns it on
"$cli" send --type media.ready --type media.updated --type media.created \
	--to "http://127.0.0.1:$port/webhooks" --secret demo-secret >/dev/null
sleep 3
shot ui-forward-down
# The interpreter itself, not a version manager's shim: kill stops it.
"$(python3 -c 'import sys; print(sys.executable)')" scripts/shots-app.py "$app_port" >"$tmp/devapp.log" 2>&1 &
devapp=$!
sleep 4
click 300 405   # the newest
click 985 274   # Forward tab
shot ui-forward
# The dialogs, against the app (they start with the Forward to URL).
click 1137 194  # Replay…
click 195 232 1.5 # Send (byte-exact)
shot ui-replay
click 1095 723  # Close
click 464 353   # Consumer check…
click 184 183 5 # Run check
shot ui-consumer-check
click 1125 733  # Close
click 88 353    # Replay selection…
click 223 417 1.5 # Preview plan
shot ui-replay-selection
click 1095 733  # Close
kill "$devapp"; wait "$devapp" 2>/dev/null || true; devapp=
# Half of a 1920 px screen: 960x640.
DISPLAY=$display xdotool windowsize "$(DISPLAY=$display xdotool search --name '^Hookscope$' | head -1)" 960 640
sleep 1.5
click 200 492   # the second newest
click 477 279   # Events tab
shot960 ui-960-deliveries
click 818 279   # Forward tab
shot960 ui-960-forward
# Back to 1280x800: the window remembers its size for the dark run.
DISPLAY=$display xdotool windowsize "$(DISPLAY=$display xdotool search --name '^Hookscope$' | head -1)" 1280 800
sleep 1
stop

start dark
click 300 645   # the divergent duplicate again (#28: the Forward shots added three above it)
shot ui-deliveries-dark
stop

# ---- OAuth tab (ui/oauth*.go): its own script and display, after this one's app has stopped ----
scripts/screenshots-oauth.sh
