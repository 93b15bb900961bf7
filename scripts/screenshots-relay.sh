#!/usr/bin/env bash
# The team relay tried as a team would, and the screenshots of the Rules
# editor and the Team relay card (docs/ui-relay.png, docs/ui-rules.png,
# docs/ui-960-rules.png): a relay on loopback with its own data folder,
# alice and bob invited, two windows (each its own HOME and store) linked
# through Settings → Team relay, deliveries sent to the relay, alice's
# window closed while 4,800 more arrive, then reopened: it links again
# from the vault and catches up (the script checks both stores hold what
# the relay holds).
# Needs: Go with cgo, the X11/GL headers, xvfb, xdotool, imagemagick.
# Coordinates are for the 1280x800 window at the screen's origin.
set -euo pipefail
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
cd "$(dirname "$0")/.."
out=docs
tmp=$(mktemp -d)
display=${SHOTS_DISPLAY:-:99}
# SHOTS_PORT is alice's window (the docs show 8787); bob's is the next,
# the relay the one after.
port=${SHOTS_PORT:-8787}
relayport=$((port + 2))
export LANG=en_US.UTF-8 WEBHOOK_SECRET=demo-secret
go build -tags "$TAGS" -o "$tmp/devrun" ./ui/internal/devrun
go build -tags "$TAGS" -o "$tmp/hookscope" .
go build -tags "$TAGS" -o "$tmp/hsload" ./internal/prove/cmd/hsload

Xvfb "$display" -screen 0 1280x800x24 >"$tmp/xvfb.log" 2>&1 &
xvfb=$!
alice= bob= relay=
cleanup() {
	for p in $alice $bob $relay; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
	kill "$xvfb" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
sleep 1

shot() { DISPLAY=$display import -window root "$out/$1.png"; echo "saved $out/$1.png"; }
shot960() { DISPLAY=$display import -window root -crop 960x640+0+0 +repage "$out/$1.png"; echo "saved $out/$1.png"; }
click() { DISPLAY=$display xdotool mousemove "$1" "$2" click 1; sleep "${3:-0.7}"; }
wheel() { DISPLAY=$display xdotool mousemove "$1" "$2"; for _ in $(seq "$3"); do DISPLAY=$display xdotool click "$4"; sleep 0.05; done; sleep 0.8; }
typing() { DISPLAY=$display xdotool type --delay 8 "$1"; sleep 1; }
up() { for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$1) 2>/dev/null && return; sleep 0.2; done; echo "nothing listens on $1" >&2; exit 1; }
count() { "$tmp/hookscope" list --db "$1" --limit 100000 --json | grep -c '"id"'; }
window() { # NAME PORT: a window with its own HOME and store ($! is its pid)
	HOME="$tmp/home-$1" XDG_CONFIG_HOME="$tmp/home-$1/.config" DISPLAY=$display FYNE_THEME=light \
		"$tmp/devrun" --db "$tmp/$1.db" --secret-env WEBHOOK_SECRET --addr "127.0.0.1:$2" >>"$tmp/$1.log" 2>&1 &
}
# link CONNFILE: Settings, scrolled to the Team relay card, the string
# typed into its field, Enter.
link() {
	click 277 155       # the Settings tab (three header rows before the link)
	wheel 12 500 14 5   # down to Team relay, the wheel over the cards' left edge
	click 500 535       # its field
	typing "$(cat "$1")"
	DISPLAY=$display xdotool key Return
	sleep 3
}

HOME="$tmp/home-relay" "$tmp/hookscope" relay --addr "127.0.0.1:$relayport" --data "$tmp/relay" >"$tmp/relay.log" 2>&1 &
relay=$!
up $relayport
for who in alice bob; do
	HOME="$tmp/home-relay" "$tmp/hookscope" relay invite "$who" --data "$tmp/relay" --out "$tmp/$who.relay" >/dev/null 2>&1
done
url=http://127.0.0.1:$relayport/webhooks
"$tmp/hookscope" send "$url" --secret-env WEBHOOK_SECRET --all-types --ignore-status >/dev/null

window alice "$port"
alice=$!
up "$port"
sleep 2
link "$tmp/alice.relay"
"$tmp/hookscope" send "$url" --secret-env WEBHOOK_SECRET --scenario at-least-once --duplicates 1 --shuffle --ignore-status >/dev/null
kill "$alice"; wait "$alice" 2>/dev/null || true; alice=

window bob $((port + 1))
bob=$!
up $((port + 1))
sleep 2
link "$tmp/bob.relay"
kill "$bob"; wait "$bob" 2>/dev/null || true; bob=

# While alice's window is closed: 4,800 deliveries, then one of each type.
"$tmp/hsload" run --url "$url" --secret-env WEBHOOK_SECRET --rate 400 --duration 12s --warmup 0s --concurrency 8 >/dev/null
"$tmp/hookscope" send "$url" --secret-env WEBHOOK_SECRET --all-types --ignore-status >/dev/null
window alice "$port"
alice=$!
up "$port"
sleep 6
held=$(HOME="$tmp/home-relay" "$tmp/hookscope" relay status --data "$tmp/relay" --json | grep -o '"deliveries": *[0-9]*' | head -1 | grep -o '[0-9]*$')
echo "relay holds $held deliveries; alice's store $(count "$tmp/alice.db"), bob's $(count "$tmp/bob.db") (its window was closed before the load)"

# The Rules editor: the newest delivery selected, three rules, a test.
click 300 445 1           # the newest row
click 277 195             # the Settings tab (the Relay row is shown now)
wheel 12 500 8 5          # down to Answer rules
# Add rule sits under the rules: it moves down a row (40 px) with each.
click 65 502 0.5
typing 'delivery.signature == "invalid" => close'
click 65 499 0.5
typing 'live_event.* => 500 x2 then 200'
click 65 539 0.5
typing 'events.exists(e, e.type == "viewing_session.play") => 200 after 12s'
click 140 619 1.5                # Test against selected delivery
click 75 733 1.5                 # Save settings
click 1200 106 1                 # Answer rules… (the Answers row, shown once saved): the card at the top
DISPLAY=$display xdotool mousemove 700 200
sleep 0.5
shot ui-rules

# The Team relay card, from the header's Relay… button.
click 240 185 1                  # Relay… (below the Answers row now)
DISPLAY=$display xdotool mousemove 700 200
sleep 0.5
shot ui-relay

# 960x640: a fourth rule with an error under it.
DISPLAY=$display xdotool windowsize "$(DISPLAY=$display xdotool search --name '^Hookscope$' | head -1)" 960 640
sleep 1.5
click 880 106 1.5                # Answer rules… opens the card
click 65 524 0.5                 # Add rule
typing 'delivery.sise > 100000 => 500'
wheel 30 300 3 5
shot960 ui-960-rules
