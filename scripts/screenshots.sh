#!/usr/bin/env bash
# Runs the real Hookscope window under Xvfb with a throw-away store, sends
# simulated deliveries, and saves a PNG of each view into docs/.
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick.
set -euo pipefail
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=:99
bin="$tmp/hookscope"
export LANG=en_US.UTF-8
go build -tags migrated_fynedo -o "$bin" ./ui/internal/devrun

Xvfb "$display" -screen 0 1440x900x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
app=
cleanup() {
	[ -n "$app" ] && kill "$app" 2>/dev/null || true
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
		curl -s -o /dev/null http://127.0.0.1:8787/ && break
		sleep 0.2
	done
	sleep 1.5
}
stop() { kill "$app"; wait "$app" 2>/dev/null || true; app=; sleep 1; }

start light
shot ui-empty
WEBHOOK_SECRET=demo-secret "$bin" --secret-env WEBHOOK_SECRET send http://127.0.0.1:8787/webhooks
sleep 1.5
click 200 330   # the newest delivery
shot ui-deliveries
click 200 390   # the divergent duplicate
shot ui-events-divergent
click 497 312   # JSON tab
shot ui-json
click 610 312   # Headers tab
shot ui-headers
click 693 312   # Signature tab
click 200 330
shot ui-signature
click 128 155   # Settings tab
shot ui-settings
stop

start dark
click 200 330
shot ui-deliveries-dark
stop
