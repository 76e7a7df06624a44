# python3 docs/deeper/07_slow_site.py PORT [LAB_PORT]: the lab server's /site/ (on 127.0.0.1:LAB_PORT,
# 8080 if not given), served on 127.0.0.1:PORT with every answer 100 ms late, as if each page came
# from a distant server.
import http.client
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


LAB_PORT = int(sys.argv[2]) if len(sys.argv) > 2 else 8080


class SlowSite(BaseHTTPRequestHandler):
    def do_GET(self):
        time.sleep(0.1)
        # The Host header is passed on, so the site's absolute links and redirects point here.
        lab = http.client.HTTPConnection("127.0.0.1", LAB_PORT, timeout=10)
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
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), SlowSite).serve_forever()
