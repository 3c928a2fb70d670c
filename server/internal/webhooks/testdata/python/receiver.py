"""A webhook receiver that verifies every delivery with the standardwebhooks
package (the Standard Webhooks project's own Python implementation).

Usage: receiver.py SECRET. It listens on a free loopback port and prints it
on the first line of stdout. POST: verify; 204 when the signature holds,
401 with the library's message when not. GET: the verified deliveries and
the rejected requests, as JSON.
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from standardwebhooks.webhooks import Webhook, WebhookVerificationError

webhook = Webhook(sys.argv[1])
lock = threading.Lock()
received = []
rejected = []


class Handler(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        try:
            payload = webhook.verify(body, dict(self.headers))
        except WebhookVerificationError as e:
            with lock:
                rejected.append({"path": self.path, "id": self.headers.get("webhook-id"), "error": str(e)})
            self.send_response(401)
            self.end_headers()
            return
        with lock:
            received.append({"path": self.path, "id": self.headers["webhook-id"], "payload": payload})
        self.send_response(204)
        self.end_headers()

    def do_GET(self):
        with lock:
            out = json.dumps({"received": received, "rejected": rejected}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
