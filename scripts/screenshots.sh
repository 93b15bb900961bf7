#!/usr/bin/env bash
# Runs the real Hookscope window under Xvfb with a throw-away store, sends
# simulated deliveries, and saves a PNG of each view into docs/.
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick.
set -euo pipefail
# Build tags: the Makefile exports them; run directly, read them from it.
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=${SHOTS_DISPLAY:-:99}
bin="$tmp/hookscope"
export LANG=en_US.UTF-8
go build -tags "$TAGS" -o "$bin" ./ui/internal/devrun

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
app=
second=
cleanup() {
	[ -n "$app" ] && kill "$app" 2>/dev/null || true
	[ -n "$second" ] && kill "$second" 2>/dev/null || true
	kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sleep 1

shot() { DISPLAY=$display import -window root "$out/$1.png"; echo "saved $out/$1.png"; }
click() { DISPLAY=$display xdotool mousemove "$1" "$2" click 1; sleep 0.7; }

start() { # $1: theme (light|dark)
	HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME="$1" \
		WEBHOOK_SECRET=demo-secret "$bin" --db "$tmp/hooks.db" --secret-env WEBHOOK_SECRET >"$tmp/app.log" 2>&1 &
	app=$!
	for _ in $(seq 50); do
		# a bare TCP connect: an HTTP probe would be recorded as a delivery
		(exec 3<>/dev/tcp/127.0.0.1/8787) 2>/dev/null && break
		sleep 0.2
	done
	sleep 1.5
}
stop() { kill "$app"; wait "$app" 2>/dev/null || true; app=; sleep 1; }

start light
shot ui-empty
WEBHOOK_SECRET=demo-secret "$bin" --secret-env WEBHOOK_SECRET send http://127.0.0.1:8787/webhooks
sleep 1.5
# Coordinates are for the default 1280x800 window at the screen's origin.
click 300 420   # the divergent duplicate (second newest)
shot ui-deliveries
click 1214 607  # Full diff… on its card
shot ui-full-diff
click 639 671   # Close
click 685 312   # JSON tab
shot ui-json
click 800 312   # Headers tab
shot ui-headers
click 300 362   # the newest: signed with the wrong key
click 883 312   # Signature tab
shot ui-signature
click 737 312   # Raw tab
shot ui-raw
click 194 155   # Settings tab (third, after OAuth)
shot ui-settings
click 150 636   # answer mode: 500
click 73 727    # Save settings
shot ui-answer-mode
click 150 601   # back to 200, for the runs below
click 73 727
# A second window on the same port: the first one holds 8787.
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME=light \
	"$bin" --db "$tmp/second.db" >"$tmp/second.log" 2>&1 &
second=$!
sleep 3
shot ui-port-taken
kill "$second"; wait "$second" 2>/dev/null || true; second=
stop

start dark
click 300 420
shot ui-deliveries-dark
stop

# ---- OAuth tab (ui/oauth*.go): its own script and display, after this one's app has stopped ----
scripts/screenshots-oauth.sh
