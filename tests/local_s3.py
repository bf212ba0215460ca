"""A local S3 API server for tests and benchmarks (:func:`s3_server`), and an HTTP
proxy in front of it (:class:`S3Proxy`) that counts what clients ask for and can
inject faults: the measuring stick of bench/bench_object_storage.py and the fault
tests of tests/storage/test_object_storage.py.

Clients are pointed at the proxy (``endpoint``) instead of the server; every request is
forwarded unchanged (the Host header too, so request signatures stay valid) and the
response relayed. ``requests`` lists ``(method, path, status, response body bytes)``.
``fault`` is called with ``(number, method, path)`` for each request (numbered from 0)
and may return None (forward), ``"reset"`` (close the connection without an answer),
``"503"`` (answer 503 SlowDown, as S3 does when throttling) or ``("stall", seconds)``
(answer only after that long).

Only 127.0.0.1 is used: the proxy listens there and forwards to a server there.
"""
from __future__ import annotations

import contextlib
import http.client
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["S3Proxy", "s3_server"]


@contextlib.contextmanager
def s3_server(*buckets: str):
    """An S3 API server (moto, server mode) on 127.0.0.1 with ``buckets``, and the
    process environment pointing every S3 client (pyarrow, boto3, and the processes
    started meanwhile) at it: yields ``(endpoint, environment)``; both are undone after."""
    import boto3
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    env = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
           "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = boto3.client("s3", endpoint_url=endpoint)
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        yield endpoint, env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()

_SLOW_DOWN = (b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code>'
              b"<Message>Please reduce your request rate.</Message></Error>")
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "te", "trailer", "upgrade"}


class S3Proxy:
    """``with S3Proxy("http://127.0.0.1:PORT") as proxy: ...proxy.endpoint...``"""

    def __init__(self, upstream: str):
        parts = urlsplit(upstream)
        if parts.hostname not in ("127.0.0.1", "localhost"):
            raise ValueError("the proxy forwards to a server on this machine only")
        self.upstream = (parts.hostname, parts.port)
        self.requests: list[tuple[str, str, int, int]] = []
        self.fault = None
        self._lock = threading.Lock()
        self._count = 0
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # quiet
                pass

            def _relay(self):
                with proxy._lock:
                    number = proxy._count
                    proxy._count += 1
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    body = self._read_chunked()  # (pyarrow's uploads: forwarded with a Content-Length)
                action = proxy.fault(number, self.command, self.path) if proxy.fault else None
                if action == "reset":
                    proxy._record(self.command, self.path, 0, 0)
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.close_connection = True
                    self.connection.close()
                    return
                if action == "503":
                    proxy._record(self.command, self.path, 503, len(_SLOW_DOWN))
                    self.send_response(503)
                    self.send_header("Content-Type", "application/xml")
                    self.send_header("Content-Length", str(len(_SLOW_DOWN)))
                    self.end_headers()
                    self.wfile.write(_SLOW_DOWN)
                    return
                if isinstance(action, tuple) and action[0] == "stall":
                    time.sleep(action[1])
                conn = http.client.HTTPConnection(*proxy.upstream, timeout=60)
                try:
                    headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
                    conn.request(self.command, self.path, body=body if self.command not in ("GET", "HEAD") or body
                                 else None, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                    self.send_response(resp.status, resp.reason)
                    for k, v in resp.getheaders():
                        if k.lower() not in _HOP_BY_HOP and k.lower() != "content-length":
                            self.send_header(k, v)
                    # a HEAD answer carries the object's length, not that of its (empty) body
                    length = resp.getheader("Content-Length") if self.command == "HEAD" else None
                    self.send_header("Content-Length", length if length is not None else str(len(data)))
                    # recorded before the client can see the answer: counts read right after a call are whole
                    proxy._record(self.command, self.path, resp.status, len(data) if self.command != "HEAD" else 0)
                    self.end_headers()
                    if self.command != "HEAD":
                        self.wfile.write(data)
                finally:
                    conn.close()

            def _read_chunked(self) -> bytes:
                parts = []
                while True:
                    size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):  # trailers
                            pass
                        return b"".join(parts)
                    parts.append(self.rfile.read(size))
                    self.rfile.readline()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _relay

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def _record(self, method: str, path: str, status: int, nbytes: int) -> None:
        with self._lock:
            self.requests.append((method, path, status, nbytes))

    def reset_counts(self) -> None:
        with self._lock:
            self.requests = []

    def counts(self, key_part: str = "") -> tuple[int, int]:
        """``(requests, response bytes)`` of the requests whose path contains ``key_part``."""
        with self._lock:
            rows = [r for r in self.requests if key_part in r[1]]
        return len(rows), sum(r[3] for r in rows)

    def __enter__(self) -> "S3Proxy":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
