"""The service, re-sending, for scripts/screenshots.sh's Re-sends shots.

It posts signed messages to Hookscope and sends each one again, with the
same hook uuid, while it is not answered 2xx within 10 s, after the gaps
of its schedule (plus a little jitter), as the service does. Which
answer each attempt meets is chosen by where it is sent: a plan names,
per attempt, a receiver that answers 200, 500, closes or holds
(`hookscope listen --answer ...` on the same store), which is what answer
rules such as "500 x2 then 200" do in one receiver.

    shots-resender.py SECRET SCHEDULE OK_URL 500_URL CLOSE_URL HANG_URL

SCHEDULE is the gaps in seconds, e.g. 5,30,90 (the service's own are
longer; a screenshot run cannot wait half an hour).
"""
import hashlib
import hmac
import json
import random
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

secret, schedule = sys.argv[1].encode(), [float(s) for s in sys.argv[2].split(",")]
urls = {"200": sys.argv[3], "500": sys.argv[4], "close": sys.argv[5], "hang": sys.argv[6]}
random.seed(11)

# Per message type: the answer each attempt meets (the last one repeats).
plans = [
    ("media.ready", ["500", "500", "200"]),
    ("media.ready", ["500", "500", "200"]),
    ("media.updated", ["close", "200"]),
    ("viewing_session.play", ["hang", "200"]),
    ("media.failed", ["500"]),
    ("media.created", ["200"]),
    ("media.created", ["200"]),
    ("viewing_session.percent_watched", ["500", "200"]),
    ("media.transcript_updated", ["200"]),
    ("media.ready", ["500", "500", "200"]),
]


def body(hook, typ, i):
    ev = {
        "uuid": uuid.UUID(int=random.getrandbits(128)).hex[:16],
        "type": typ,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "metadata": {"account_id": "4875402"},
        "payload": {"media": {"id": "m%05d" % i, "name": "Release notes %d" % i, "duration": 93.5,
                              "url": "https://acme.videohost.example/medias/m%05d" % i}},
    }
    return json.dumps({"hook": {"uuid": hook}, "events": [ev]}).encode()


def post(url, data):
    req = urllib.request.Request(url, data=data, method="POST", headers={
        "User-Agent": "Service-Webhooks/0.0.47", "Content-Type": "application/json",
        "X-Service-Signature": hmac.new(secret, data, hashlib.sha256).hexdigest()})
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception:
        return 0  # closed, or no answer within 10 s


def message(i, typ, plan):
    hook = uuid.UUID(int=random.getrandbits(128)).hex
    data = body(hook, typ, i)
    for n in range(len(schedule) + 1):
        status = post(urls[plan[min(n, len(plan) - 1)]], data)
        print(hook[:8], typ, "attempt", n + 1, "->", status or "no answer", flush=True)
        if 200 <= status < 300 or n == len(schedule):
            return
        time.sleep(schedule[n] * random.uniform(0.95, 1.05))


threads = []
for i, (typ, plan) in enumerate(plans):
    t = threading.Thread(target=message, args=(i, typ, plan))
    t.start()
    threads.append(t)
    time.sleep(0.4)
for t in threads:
    t.join()
