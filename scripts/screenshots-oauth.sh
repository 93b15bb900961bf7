#!/usr/bin/env bash
# Screenshots of the OAuth tab (docs/oauth-*.png): runs the real window
# (ui/internal/devrun) under Xvfb with a throw-away store, presses "Try with
# the sandbox" and Authorize, plays the browser with ui/internal/oauthbrowser
# (log in, approve or be refused, deliver the redirect to the window's
# callback listener), and clicks through the steps.
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick.
# Coordinates are for the default 1280x800 window at the screen's origin
# (a three-row header: the tabs at y=155).
set -euo pipefail
# Build tags: the Makefile exports them; run directly, read them from it.
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=${OAUTH_SHOTS_DISPLAY:-:98}
# SHOTS_PORT keeps 8787 free (as in scripts/screenshots.sh); the docs show 8787.
port=${SHOTS_PORT:-8787}
export LANG=en_US.UTF-8
go build -tags "$TAGS" -o "$tmp/devrun" ./ui/internal/devrun
go build -o "$tmp/oauthbrowser" ./ui/internal/oauthbrowser

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
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
click() { DISPLAY=$display xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.8}"; }
wheel_down() { DISPLAY=$display xdotool mousemove 800 500 click --repeat "$1" --delay 15 5; sleep 0.8; }
browse() { "$tmp/oauthbrowser" --db "$tmp/hooks.db" "$@"; sleep 1.5; }

port_busy() { (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; }

start() { # a fresh store each time, so the layout is the same on every run
	# The window's receiver listens on 127.0.0.1:$port; another Hookscope
	# there would show "receiver stopped" in every shot.
	for _ in $(seq 60); do port_busy || break; sleep 1; done
	if port_busy; then echo "screenshots-oauth: 127.0.0.1:$port is in use; stop the other Hookscope first or set SHOTS_PORT" >&2; exit 1; fi
	rm -rf "$tmp"/hooks.db*   # the store and its side files (hooks.db-inbox is a folder)
	HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME=light \
		HOOKSCOPE_DB="$tmp/hooks.db" "$tmp/devrun" --addr "127.0.0.1:$port" >"$tmp/app.log" 2>&1 &
	app=$!
	sleep 3
	click 206 155     # OAuth tab (after Deliveries and Re-sends)
	click 200 198 1.5 # Try with the sandbox
}
stop() { kill "$app"; wait "$app" 2>/dev/null || true; app=; sleep 1; }

start
shot oauth-sandbox
click 452 360 1   # Authorize: listens on the redirect URI, shows the URL
shot oauth-authorize
browse            # owner approves; the window exchanges the code at once
shot oauth-token
wheel_down 2      # the exchange's Request and response, at the pane's foot…
click 500 663     # …opened
wheel_down 16     # its request and response in view
shot oauth-exchange-detail
wheel_down 80     # to the pane's end: the clicks below are at its foot, which the header does not move
click 470 560 1   # Refresh token
wheel_down 40
click 860 688     # Token as…
click 555 782 0.5 # …all three side by side
click 1230 648 1.5 # Send
shot oauth-call
click 482 195 1   # History
shot oauth-history
stop

start
click 452 360 1
browse --email viewer@example.com --password viewer  # a viewer may not authorize
shot oauth-denied
stop
