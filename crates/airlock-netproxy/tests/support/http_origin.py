"""An HTTP/1.1 origin server for the forwarding tests, written on Python's own
http.server (an implementation independent of the proxy's).

    python3 http_origin.py 127.0.0.3     # prints the port it listens on, then serves

Routes:
  GET  /hello       "hello\n", Content-Length
  HEAD /hello       the same head, no body
  GET  /chunked?n=N N bytes of 'c' as a chunked body (in 1000-byte chunks)
  GET  /close       a body delimited by closing the connection (no length)
  GET  /headers     the request's header fields as JSON [[name, value], ...]
  POST /echo        the request body back (Content-Length or chunked request)
  GET  /count       how many requests came before this one (other than /count)
"""
import http.server
import json
import sys
import threading

seen = 0
lock = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def count(self):
        global seen
        if not self.path.startswith("/count"):
            with lock:
                seen += 1

    def send(self, body, status=200, ctype="application/octet-stream", head_only=False):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head_only:
            self.wfile.write(body)

    def do_HEAD(self):
        self.count()
        self.send(b"hello\n", ctype="text/plain", head_only=True)

    def do_GET(self):
        self.count()
        path, _, query = self.path.partition("?")
        if path == "/hello":
            self.send(b"hello\n", ctype="text/plain")
        elif path == "/chunked":
            n = int(query.split("=", 1)[1])
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            left = n
            while left > 0:
                k = min(1000, left)
                self.wfile.write(b"%x\r\n" % k + b"c" * k + b"\r\n")
                left -= k
            self.wfile.write(b"0\r\nX-Trailer: yes\r\n\r\n")
        elif path == "/close":
            self.send_response(200)
            self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(b"until the end\n" * 1000)
            self.close_connection = True
        elif path == "/headers":
            self.send(json.dumps(list(self.headers.items())).encode(), ctype="application/json")
        elif path == "/count":
            with lock:
                self.send(str(seen).encode(), ctype="text/plain")
        else:
            self.send(b"not found\n", status=404, ctype="text/plain")

    def do_POST(self):
        self.count()
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                body += self.rfile.read(size)
                self.rfile.readline()
        else:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send(body)


server = http.server.ThreadingHTTPServer((sys.argv[1], 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
