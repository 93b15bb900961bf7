#!/usr/bin/env bash
# Screenshots of the filter bar's expression, the re-send observatory and
# a multi-selection (docs/ui-expression*.png, ui-resends.png,
# ui-multiselect.png and their ui-960-* versions), on a store as a new
# user's would be after a while: a few thousand deliveries (the
# simulator's at-least-once scenario several times, every type, a flood at
# 100/s) and messages the service re-sent on its schedule.
#
# The re-sends: scripts/shots-resender.py plays the service, sending each
# message again while it is not answered 2xx within 10 s. Which answer an
# attempt meets is chosen by where it goes: the window answers 200, and
# `hookscope listen --db` on the same store answers 500, closes or holds
# (what one receiver's answer rules such as "500 x2 then 200" do). Its
# schedule is 5 s, 30 s, 90 s (SHOTS_RESEND, seconds): a run cannot wait
# for a real service's half hour.
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick, python3.
# Coordinates are for the default 1280x800 window at the screen's origin.
set -euo pipefail
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=${SHOTS_DISPLAY:-:99}
# SHOTS_PORT moves the window off 8787 (the docs show 8787); the three
# other receivers take the next ports.
port=${SHOTS_PORT:-8787}
schedule=${SHOTS_RESEND:-5,30,90}
export LANG=en_US.UTF-8
go build -tags "$TAGS" -o "$tmp/devrun" ./ui/internal/devrun
go build -tags "$TAGS" -o "$tmp/hookscope" .
go build -tags "$TAGS" -o "$tmp/hsload" ./internal/prove/cmd/hsload

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
app= receivers=() service=
cleanup() {
	for p in $service "${receivers[@]}" $app; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sleep 1

shot() { DISPLAY=$display import -window root "$out/$1.png"; echo "saved $out/$1.png"; }
shot960() { DISPLAY=$display import -window root -crop 960x640+0+0 +repage "$out/$1.png"; echo "saved $out/$1.png"; }
click() { DISPLAY=$display xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.7}"; }
key() { DISPLAY=$display xdotool key "$@"; sleep 0.5; }
typing() { DISPLAY=$display xdotool type --delay 15 "$1"; sleep 1.5; }
modclick() { DISPLAY=$display xdotool keydown "$1" mousemove "$2" "$3" click 1 keyup "$1"; sleep 0.7; }
up() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.2; done; echo "nothing listens on $1" >&2; exit 1; }
resize() { DISPLAY=$display xdotool windowsize "$(DISPLAY=$display xdotool search --name '^Hookscope$' | head -1)" "$1" "$2"; sleep 1.5; }

export WEBHOOK_SECRET=demo-secret
HOME="$tmp/home" XDG_CONFIG_HOME="$tmp/config" DISPLAY=$display FYNE_THEME=light \
	"$tmp/devrun" --db "$tmp/hooks.db" --secret-env WEBHOOK_SECRET --addr "127.0.0.1:$port" >"$tmp/app.log" 2>&1 &
app=$!
up "$port"
i=1
for answer in 500 close hang; do
	"$tmp/hookscope" listen --db "$tmp/hooks.db" --secret-env WEBHOOK_SECRET --addr "127.0.0.1:$((port + i))" --answer "$answer" >"$tmp/listen-$answer.log" 2>&1 &
	receivers+=($!)
	up $((port + i))
	i=$((i + 1))
done
url=http://127.0.0.1
"$(python3 -c 'import sys; print(sys.executable)')" scripts/shots-resender.py demo-secret "$schedule" \
	"$url:$port/webhooks" "$url:$((port + 1))/webhooks" "$url:$((port + 2))/webhooks" "$url:$((port + 3))/webhooks" >"$tmp/service.log" 2>&1 &
service=$!
for _ in 1 2 3; do
	"$tmp/hookscope" send "$url:$port/webhooks" --secret-env WEBHOOK_SECRET --scenario at-least-once --duplicates 1 --shuffle --ignore-status >/dev/null
done
"$tmp/hookscope" send "$url:$port/webhooks" --secret-env WEBHOOK_SECRET --all-types --ignore-status >/dev/null
"$tmp/hsload" run --url "$url:$port/webhooks" --secret-env WEBHOOK_SECRET --rate 100 --duration 25s --warmup 0s --concurrency 8 >/dev/null
wait "$service"
service=
sleep 2

# The filter bar: words in the search box, then the expression extended.
click 255 194   # the search box
typing "trailer"
click 300 272   # the expression field, after what the search box wrote
key Down Down Down End # the end of a wrapped field
typing ' && events.exists(e, e.type.startsWith("media."))'
click 300 405   # the newest match
shot ui-expression
click 300 272
key Down Down Down End # the end of a wrapped field
typing ' && delivery.sigature == "valid"'
shot ui-expression-error
resize 960 640
shot960 ui-960-expression-error
resize 1280 800
click 545 194   # Clear

# A multi-selection: a click, Shift-click three rows down, Ctrl-click.
click 300 465   # the second newest
modclick shift 300 645
modclick ctrl 300 705
shot ui-multiselect
resize 960 640
shot960 ui-960-multiselect
resize 1280 800
key Escape

# The observatory: a delivery sent once shown (no message card), a mark
# hovered; then the message of one the service re-sent.
click 300 705   # a flood delivery, sent once
click 131 155 2 # Re-sends tab
DISPLAY=$display xdotool mousemove 593 561; sleep 0.3
DISPLAY=$display xdotool mousemove 594 561; sleep 0.8
shot ui-resends
resize 960 640
shot960 ui-960-resends
resize 1280 800
click 45 155    # Deliveries
click 300 465   # a re-sent message's last attempt (the service's, newest)
click 1015 194 2 # Sent N times…
shot ui-resends-message
