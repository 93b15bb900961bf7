"""The developer's app in scripts/screenshots.sh's Forward shots: it
answers every delivery 200 with a small JSON body and logs what it got."""
import http.server
import json
import sys

count = 0


class App(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global count
        count += 1
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        types = [e.get("type") for e in json.loads(body).get("events", [])]
        out = json.dumps({"received": count, "types": types, "queued_jobs": len(types)}).encode()
        print(self.path, types, flush=True)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), App).serve_forever()
