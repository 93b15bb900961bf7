#!/usr/bin/env bash
# Smoke test of the real binary: the desktop app starts under Xvfb with a
# throw-away config folder, receives signed deliveries, and stays up; then
# the headless commands answer --help and refuse bad flags with exit 2.
set -euo pipefail
bin=${1:-./hookscope}
work=$(mktemp -d)
cleanup() {
  [ -n "${app:-}" ] && { kill "$app" 2>/dev/null; wait "$app" 2>/dev/null; } || true
  [ -n "${xvfb:-}" ] && { kill "$xvfb" 2>/dev/null; wait "$xvfb" 2>/dev/null; } || true
  rm -rf "$work" 2>/dev/null || true
}
trap cleanup EXIT
export HOME=$work XDG_CONFIG_HOME=$work/config LANG=en_US.UTF-8 LC_ALL=

"$bin" version
"$bin" --help >/dev/null
for c in listen send samples oauth sandbox; do
  "$bin" help "$c" >/dev/null 2>&1 || "$bin" "$c" --help >/dev/null 2>&1 || true
done
set +e; "$bin" listen --no-such-flag >/dev/null 2>&1; rc=$?; set -e
[ "$rc" -eq 2 ] || { echo "smoke: a wrong flag exited $rc, want 2"; exit 1; }

# Headless receiver: a signed delivery is stored and printed as JSON.
port=$(( 20000 + RANDOM % 20000 ))
"$bin" listen --addr 127.0.0.1:$port --db "$work/cli.db" --json --secret smoke-secret > "$work/listen.out" 2>"$work/listen.err" &
lp=$!
for _ in $(seq 50); do grep -q listening "$work/listen.out" 2>/dev/null && break; sleep 0.1; done
body='{"hook":{"uuid":"smoke-1"},"events":[{"uuid":"0123456789abcdef","type":"media.deleted","payload":{"media":{"id":"abcdefghij"},"project":{"id":"p1","name":"Smoke"}},"metadata":{"account_id":"a1"},"generated_at":"2026-01-01T00:00:00Z"}]}'
sig=$(printf '%s' "$body" | openssl dgst -sha256 -hmac smoke-secret | awk '{print $2}')
curl -fsS -X POST -H 'Content-Type: application/json' -H "X-Service-Signature: $sig" -H 'User-Agent: Service-Webhooks/0.0.47' --data-binary "$body" "http://127.0.0.1:$port/webhooks" >/dev/null
for _ in $(seq 50); do grep -q '"delivery_id"' "$work/listen.out" && break; sleep 0.1; done
kill -INT $lp; wait $lp || { echo "smoke: listen did not stop cleanly"; cat "$work/listen.err"; exit 1; }
grep -q '"signature":"valid"' "$work/listen.out" || { echo "smoke: listen output:"; cat "$work/listen.out" "$work/listen.err"; exit 1; }

# The desktop app under Xvfb, on a fresh store: its receiver uses the
# default address, which must be free.
if curl -s -o /dev/null --max-time 1 http://127.0.0.1:8787/ 2>/dev/null; then
  echo "smoke: something already listens on 127.0.0.1:8787 (a running Hookscope?); stop it and run again"; exit 1
fi
if ! command -v Xvfb >/dev/null; then echo "smoke: Xvfb missing (make deps-test)"; exit 1; fi
disp=:$(( 90 + RANDOM % 9 ))
Xvfb "$disp" -screen 0 1440x900x24 -nolisten tcp >/dev/null 2>&1 &
xvfb=$!
sleep 1
DISPLAY=$disp HOOKSCOPE_DB="$work/app.db" "$bin" > "$work/app.log" 2>&1 &
app=$!
ok=0
for _ in $(seq 100); do
  if curl -fsS -X POST -H 'Content-Type: application/json' -H "X-Service-Signature: $sig" --data-binary "$body" "http://127.0.0.1:8787/webhooks" >/dev/null 2>&1; then ok=1; break; fi
  kill -0 $app 2>/dev/null || break
  sleep 0.2
done
if [ $ok -ne 1 ]; then echo "smoke: the app's receiver never answered"; cat "$work/app.log"; exit 1; fi
sleep 1
kill -0 $app 2>/dev/null || { echo "smoke: the app exited"; cat "$work/app.log"; exit 1; }
if command -v import >/dev/null; then DISPLAY=$disp import -window root "${SMOKE_SHOT:-$work/smoke.png}" && echo "smoke: screenshot ok"; fi
echo "smoke: ok"
