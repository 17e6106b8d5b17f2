#!/usr/bin/python3
"""A loopback stand-in for an Ichnaea (Mozilla Location Service) geolocation server, for the test suites.

It listens on 127.0.0.1 on a free port, over HTTP or, given a certificate and key, HTTPS, and writes the port into
--port-file once it accepts connections. Every request is appended to --log as one JSON line (method, path with the
query, headers in order, body in base64) before it is answered, so a client holding an answer finds its request
there.

Answers follow --control, a JSON file read again for every request (replace it atomically):

    {
      "location": {"lat": 52.52, "lng": 13.405, "accuracy": 25.0},
      "responses": {
        "/v1/geolocate": {"mode": "respond", "status": 200, "body": "...", "headers": {"Name": "value"}},
        "/slow": {"mode": "hang"},
        "/big": {"mode": "huge", "bytes": 10485760, "declare_length": false},
        "/gone": {"mode": "close"},
        "/cut": {"mode": "truncate", "body": "...", "declared": 1000}
      }
    }

A path (without the query) found in "responses" is answered as it says: "respond" with that status, body and
headers; "hang" never answers (the connection stays open); "huge" sends that many bytes, with or without a
Content-Length (without, the end of the body is the end of the connection); "close" drops the connection without
an answer; "truncate" announces a Content-Length of "declared" bytes, sends only "body" and closes the connection.
Otherwise a POST is answered as Ichnaea answers it: to /v1/geolocate, 200 with "location" (the defaults, or the
control file's) or 400 with Ichnaea's parse error when the body is not a JSON object; to
/v2/geosubmit, 200 with {} or 400 with the parse error when the body is not a JSON object with an "items" list.
Anything else is a 404.

Only the Python standard library is used (Debian's /usr/bin/python3 is enough).
"""

import argparse
import base64
import json
import os
import socket
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

GEOLOCATE = "/v1/geolocate"
GEOSUBMIT = "/v2/geosubmit"
PARSE_ERROR = {
    "error": {
        "errors": [{"domain": "global", "reason": "parseError", "message": "Parse Error"}],
        "code": 400,
        "message": "Parse Error",
    }
}
NOT_FOUND = {
    "error": {
        "errors": [{"domain": "geolocation", "reason": "notFound", "message": "Not found"}],
        "code": 404,
        "message": "Not found",
    }
}


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, options):
        super().__init__(("127.0.0.1", 0), Handler)
        self.options = options
        self.log_lock = threading.Lock()
        self.never = threading.Event()
        self.tls = None
        if options.cert:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(options.cert, options.key)
            # The handshake runs on the request's thread (in Handler.setup), so a client that stalls it or rejects
            # the certificate holds up no one else.
            self.socket = context.wrap_socket(self.socket, server_side=True, do_handshake_on_connect=False)
            self.tls = context

    def control(self):
        try:
            with open(self.options.control, encoding="utf-8") as file:
                return json.load(file)
        except FileNotFoundError:
            return {}

    def record(self, entry):
        line = json.dumps(entry) + "\n"
        with self.log_lock:
            with open(self.options.log, "a", encoding="utf-8") as file:
                file.write(line)
                file.flush()

    def handle_error(self, request, client_address):
        # A client that gave up (a timeout, a body too large, a certificate it refused) is expected; one line each.
        kind, value, _ = sys.exc_info()
        print(f"connection from {client_address[0]}:{client_address[1]}: {kind.__name__}: {value}", file=sys.stderr,
              flush=True)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "IchnaeaTestServer/1"

    def setup(self):
        if self.server.tls is not None:
            self.request.do_handshake()
        super().setup()

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self.serve()

    def do_POST(self):
        self.serve()

    def do_PUT(self):
        self.serve()

    def do_DELETE(self):
        self.serve()

    def read_body(self):
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return body
                body += self.rfile.read(size)
                self.rfile.readline()
        return b""

    def serve(self):
        body = self.read_body()
        self.server.record({
            "method": self.command,
            "path": self.path,
            "headers": [[name, value] for name, value in self.headers.items()],
            "body": base64.b64encode(body).decode("ascii"),
        })
        control = self.server.control()
        path = self.path.split("?", 1)[0]
        answer = control.get("responses", {}).get(path)
        if answer is None:
            self.default(path, body, control)
            return
        mode = answer.get("mode", "respond")
        if mode == "hang":
            self.server.never.wait()
        elif mode == "close":
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif mode == "truncate":
            body = answer.get("body", "").encode("utf-8")
            self.send_response(200)
            self.send_header("Content-Length", str(int(answer["declared"])))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        elif mode == "huge":
            self.huge(int(answer["bytes"]), bool(answer.get("declare_length", False)))
        else:
            self.respond(int(answer.get("status", 200)), answer.get("body", "").encode("utf-8"),
                         answer.get("headers", {}))

    def default(self, path, body, control):
        if path not in (GEOLOCATE, GEOSUBMIT) or self.command != "POST":
            self.respond_json(404, NOT_FOUND)
            return
        try:
            query = json.loads(body.decode("utf-8")) if body else {}
        except (UnicodeDecodeError, ValueError):
            query = None
        if not isinstance(query, dict) or (path == GEOSUBMIT and not isinstance(query.get("items"), list)):
            self.respond_json(400, PARSE_ERROR)
            return
        if path == GEOSUBMIT:
            self.respond_json(200, {})
            return
        location = control.get("location", {})
        self.respond_json(200, {
            "location": {"lat": location.get("lat", self.server.options.lat),
                         "lng": location.get("lng", self.server.options.lng)},
            "accuracy": location.get("accuracy", self.server.options.accuracy),
        })

    def respond_json(self, status, value):
        self.respond(status, json.dumps(value).encode("utf-8"), {"Content-Type": "application/json"})

    def respond(self, status, body, headers):
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def huge(self, size, declare_length):
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        if declare_length:
            self.send_header("Content-Length", str(size))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        chunk = b"x" * 65536
        sent = 0
        while sent < size:
            piece = chunk[: min(len(chunk), size - sent)]
            self.wfile.write(piece)
            sent += len(piece)
        self.wfile.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--control", required=True)
    parser.add_argument("--log", required=True)
    parser.add_argument("--cert")
    parser.add_argument("--key")
    parser.add_argument("--lat", type=float, default=52.52)
    parser.add_argument("--lng", type=float, default=13.405)
    parser.add_argument("--accuracy", type=float, default=25.0)
    options = parser.parse_args()
    if bool(options.cert) != bool(options.key):
        parser.error("--cert and --key go together")
    server = Server(options)
    port = server.server_address[1]
    temporary = options.port_file + ".tmp"
    with open(temporary, "w", encoding="utf-8") as file:
        file.write(f"{port}\n")
    os.replace(temporary, options.port_file)
    print(f"listening on {'https' if server.tls else 'http'}://127.0.0.1:{port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
