# python3 docs/deeper/07_slow_site.py LAB_URL [PORT]: the lab server's site (LAB_URL is the lab
# server's URL, http://127.0.0.1:LAB_PORT/), served on 127.0.0.1:PORT with every answer 100 ms late,
# as if each page came from a distant server. PORT 0, the default, is any free port; the first line
# printed says which, as the lab server's does: listening on http://127.0.0.1:PORT/ (...)
import http.client
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


LAB = urllib.parse.urlsplit(sys.argv[1])


class SlowSite(BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.1)
        # The Host header is passed on, so the site's absolute links and redirects point here.
        lab = http.client.HTTPConnection(LAB.hostname, LAB.port, timeout=10)
        lab.request("GET", self.path, headers={"Host": self.headers["Host"]})
        answer = lab.getresponse()
        body = answer.read()
        lab.close()
        self.send_response(answer.status)
        for name in ("Content-Type", "Location"):
            if answer.getheader(name):
                self.send_header(name, answer.getheader(name))
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


ThreadingHTTPServer.request_queue_size = 64  # the listen backlog: room for many workers at once
server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2]) if len(sys.argv) > 2 else 0), SlowSite)
# Printed once the socket listens, and flushed: a reader waiting for this line may crawl at once.
print(f"listening on http://127.0.0.1:{server.server_port}/ (every answer 100 ms late)", flush=True)
server.serve_forever()
