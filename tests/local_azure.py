"""A local Azure Blob Storage REST server for tests (:func:`azure_server`).

No Azure emulator can be installed on these machines (Azurite is published on npm
only, which is not reachable; the one PyPI package called an Azure emulator serves the
resource-manager API, not Blob REST). This one serves the part of the Blob service
REST API that rcfmt's clients use -- pyarrow's ``AzureFileSystem`` (the Azure C++ SDK)
and ``azure-storage-blob`` -- over real HTTP, with the semantics Microsoft's REST
reference gives them:

- containers: create, properties, delete, list blobs (``prefix``, ``delimiter``,
  ``marker``/``maxresults`` paging);
- block blobs: Put Blob, Put Block + Put Block List (staged blocks are invisible until
  the list is committed; the blob appears whole at once), Get Blob with a ``Range`` /
  ``x-ms-range``, Get Blob Properties, Set Blob Metadata, Delete Blob, Copy Blob (same
  account, synchronous);
- conditional requests, checked atomically with the write: ``If-None-Match: *`` fails
  with ``409 BlobAlreadyExists`` when the blob exists, ``If-Match``/``If-None-Match``
  with an ETag with ``412 ConditionNotMet``;
- the Data Lake endpoint answers as on an account without a hierarchical namespace (as
  Azurite does), so clients use the Blob API.

Requests are not authenticated (any account key is taken). For tests, the server keeps
a log of what it answered (``GET /__log``: ``[method, path, status, body bytes]`` per
request; ``DELETE /__log`` clears it) and injects faults into ranged reads of a blob
(``PUT /__fault?kind=503|reset|stall|whole&name=...&times=N[&seconds=S]``; ``DELETE /__fault``):
:class:`AzureServer` wraps both. ``--latency-ms`` delays each request.

Run as ``python local_azure.py --port N``; :func:`azure_server` starts it in a
subprocess (a server inside the test process would need the GIL that pyarrow's client
may hold while it waits for the answer), sets ``AZURE_STORAGE_CONNECTION_STRING`` and
yields the endpoint.
"""
from __future__ import annotations

import argparse
import base64
import contextlib
import email.utils
import hashlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit
from xml.etree import ElementTree
from xml.sax.saxutils import escape

from local_servers import free_port, stop, wait_until_serving

__all__ = ["azure_server", "AzureServer", "connection_string", "ACCOUNT", "KEY"]

ACCOUNT = "devstoreaccount1"
#: Azurite's published development key (any key is accepted)
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
API_VERSION = "2025-01-05"


class _Blob:
    __slots__ = ("data", "etag", "modified", "created", "metadata")

    def __init__(self, data: bytes, metadata: dict, created: float | None = None):
        now = time.time()
        self.data, self.metadata = data, metadata
        self.etag = f'"0x{uuid.uuid4().hex[:15].upper()}"'
        self.modified, self.created = now, created or now


class _Store:
    def __init__(self):
        self.lock = threading.RLock()  # (answers are logged while a handler holds it)
        self.containers: dict[str, dict[str, _Blob]] = {}
        self.staged: dict[tuple[str, str], dict[str, bytes]] = {}  # (container, blob) -> block id -> bytes
        self.leases: dict[tuple[str, str], str] = {}  # (container, blob) -> lease id
        self.log: list = []
        self.fault: dict | None = None


def _http_date(t: float) -> str:
    return email.utils.formatdate(t, usegmt=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    store: _Store
    latency = 0.0

    def log_message(self, *args):  # quiet
        pass

    # ------------------------------------------------------------ plumbing
    def _send(self, status: int, body: bytes = b"", headers: dict | None = None, error: str | None = None):
        self.send_response(status)
        headers = dict(headers or {})
        headers.setdefault("x-ms-request-id", str(uuid.uuid4()))
        headers.setdefault("x-ms-version", API_VERSION)
        headers.setdefault("Date", _http_date(time.time()))
        if error:
            headers["x-ms-error-code"] = error
            if self.command != "HEAD":
                body = (f'<?xml version="1.0" encoding="utf-8"?><Error><Code>{error}</Code>'
                        f"<Message>{error}</Message></Error>").encode()
                headers["Content-Type"] = "application/xml"
        if "Content-Length" not in headers:
            headers["Content-Length"] = str(len(body))
        if not self.path.startswith("/__"):
            with self.store.lock:
                self.store.log.append([self.command, self.path, status, len(body) if self.command != "HEAD" else 0])
        for k, v in headers.items():
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and body:
            self.wfile.write(body)

    def _body(self) -> bytes:
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def _route(self):
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        segments = unquote(parts.path).lstrip("/").split("/", 2)
        account = segments[0] if segments else ""
        container = segments[1] if len(segments) > 1 else ""
        blob = segments[2] if len(segments) > 2 else ""
        return account, container, blob, query

    def _handle(self):
        if os.environ.get("RCFMT_AZURE_TEST_LOG"):
            print(self.command, self.path, {k: v for k, v in self.headers.items() if k.lower().startswith(("x-ms-", "if-", "range"))
                                            and k.lower() not in ("x-ms-date", "x-ms-version", "x-ms-client-request-id")},
                  file=sys.stderr, flush=True)
        if self.latency:
            time.sleep(self.latency)
        account, container, blob, query = self._route()
        body = self._body() if self.command in ("PUT", "POST") else b""
        if account in ("__log", "__fault"):
            return self._control(account, query)
        if "action" in query or "resource" in query or self.headers.get("x-ms-umask"):
            # Data Lake (dfs) requests: this account has no hierarchical namespace
            return self._send(409, error="HierarchicalNamespaceNotEnabled")
        if not container:
            if query.get("comp") == "list":
                return self._list_containers()
            if query.get("comp") == "properties":
                return self._send(200, b'<?xml version="1.0" encoding="utf-8"?><StorageServiceProperties/>',
                                  {"Content-Type": "application/xml"})
            return self._send(400, error="InvalidQueryParameterValue")
        if not blob:
            return self._container(container, query, body)
        return self._blob(container, blob, query, body)

    do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = lambda self: self._handle()

    def _control(self, what: str, query: dict):
        store = self.store
        with store.lock:
            if what == "__log" and self.command == "GET":
                body = json.dumps(store.log).encode()
            elif what == "__log":
                store.log.clear()
                body = b""
            elif self.command == "PUT":
                store.fault = {"kind": query["kind"], "name": query["name"], "left": int(query.get("times", 1)),
                               "seconds": float(query.get("seconds", 0))}
                body = b""
            else:
                store.fault = None
                body = b""
        return self._send(200, body, {"Content-Type": "application/json"})

    def _faulted(self, container: str, name: str) -> bool:
        """Inject the fault set for ranged reads of ``name``, if any: True when the
        request was answered (or its connection dropped) here."""
        with self.store.lock:
            fault = self.store.fault
            if not fault or fault["left"] <= 0 or f"{container}/{name}" != fault["name"]:
                return False
            fault["left"] -= 1
            kind = fault["kind"]
        if kind == "503":
            self._send(503, error="ServerBusy")
            return True
        if kind == "whole":  # a server (or proxy) that ignores the range: the whole blob, 200
            return "whole"
        if kind == "reset":
            with self.store.lock:
                self.store.log.append([self.command, self.path, 0, 0])
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
            return True
        time.sleep(fault["seconds"])  # a stall: the answer comes late
        return False

    # ------------------------------------------------------------ service and containers
    def _list_containers(self):
        with self.store.lock:
            names = sorted(self.store.containers)
        items = "".join(f"<Container><Name>{escape(n)}</Name><Properties><Last-Modified>{_http_date(time.time())}"
                        f"</Last-Modified><Etag>\"0x1\"</Etag></Properties></Container>" for n in names)
        xml = (f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://{self.headers.get("Host")}/{ACCOUNT}/">'
               f"<Containers>{items}</Containers><NextMarker/></EnumerationResults>")
        return self._send(200, xml.encode(), {"Content-Type": "application/xml"})

    def _container(self, container: str, query: dict, body: bytes):
        store = self.store
        if query.get("restype") != "container":
            return self._send(400, error="InvalidQueryParameterValue")
        with store.lock:
            exists = container in store.containers
            if self.command == "PUT":
                if exists:
                    return self._send(409, error="ContainerAlreadyExists")
                store.containers[container] = {}
                return self._send(201, headers={"ETag": '"0x1"', "Last-Modified": _http_date(time.time())})
            if not exists:
                return self._send(404, error="ContainerNotFound")
            if self.command == "DELETE":
                del store.containers[container]
                return self._send(202)
            if query.get("comp") == "list":
                blobs = {name: (b.data.__len__(), b.etag, b.modified, b.created)
                         for name, b in store.containers[container].items()}
            else:
                return self._send(200, headers={"ETag": '"0x1"', "Last-Modified": _http_date(time.time()),
                                                "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available"})
        return self._list_blobs(container, query, blobs)

    def _list_blobs(self, container: str, query: dict, blobs: dict):
        prefix, delimiter = query.get("prefix", ""), query.get("delimiter", "")
        marker, limit = query.get("marker", ""), int(query.get("maxresults") or 5000)
        entries = {}  # name -> None for a prefix, else properties
        for name in sorted(blobs):
            if not name.startswith(prefix):
                continue
            rest = name[len(prefix):]
            if delimiter and delimiter in rest:
                entries.setdefault(prefix + rest.split(delimiter, 1)[0] + delimiter, None)
            else:
                entries[name] = blobs[name]
        names = [n for n in sorted(entries) if n > marker] if marker else sorted(entries)
        page, rest = names[:limit], names[limit:]
        out = []
        for name in page:
            props = entries[name]
            if props is None:
                out.append(f"<BlobPrefix><Name>{escape(name)}</Name></BlobPrefix>")
                continue
            size, etag, modified, created = props
            out.append(f"<Blob><Name>{escape(name)}</Name><Properties><Creation-Time>{_http_date(created)}</Creation-Time>"
                       f"<Last-Modified>{_http_date(modified)}</Last-Modified><Etag>{etag}</Etag>"
                       f"<Content-Length>{size}</Content-Length><Content-Type>application/octet-stream</Content-Type>"
                       f"<BlobType>BlockBlob</BlobType><LeaseStatus>unlocked</LeaseStatus>"
                       f"<LeaseState>available</LeaseState><ServerEncrypted>true</ServerEncrypted></Properties>"
                       f"<Metadata/></Blob>")
        next_marker = f"<NextMarker>{escape(page[-1])}</NextMarker>" if rest else "<NextMarker/>"
        xml = (f'<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://'
               f'{self.headers.get("Host")}/{ACCOUNT}/" ContainerName="{escape(container)}">'
               f"<Prefix>{escape(prefix)}</Prefix><Marker>{escape(marker)}</Marker><MaxResults>{limit}</MaxResults>"
               f"<Delimiter>{escape(delimiter)}</Delimiter><Blobs>{''.join(out)}</Blobs>{next_marker}</EnumerationResults>")
        return self._send(200, xml.encode(), {"Content-Type": "application/xml"})

    # ------------------------------------------------------------ blobs
    def _props(self, b: _Blob) -> dict:
        headers = {"ETag": b.etag, "Last-Modified": _http_date(b.modified), "x-ms-creation-time": _http_date(b.created),
                   "x-ms-blob-type": "BlockBlob", "x-ms-lease-status": "unlocked", "x-ms-lease-state": "available",
                   "x-ms-server-encrypted": "true", "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        for k, v in b.metadata.items():
            headers[f"x-ms-meta-{k}"] = v
        return headers

    def _condition_fails(self, existing: _Blob | None) -> str | None:
        """The error a conditional request gets against ``existing``, or None."""
        none_match, match = self.headers.get("If-None-Match"), self.headers.get("If-Match")
        if none_match == "*" and existing is not None:
            return "BlobAlreadyExists" if self.command == "PUT" else "ConditionNotMet"
        if none_match and none_match != "*" and existing is not None and existing.etag == none_match:
            return "ConditionNotMet"
        if match and (existing is None or (match != "*" and existing.etag != match)):
            return "ConditionNotMet" if existing is not None else "BlobNotFound"
        return None

    def _metadata(self) -> dict:
        return {k[len("x-ms-meta-"):]: v for k, v in self.headers.items() if k.lower().startswith("x-ms-meta-")}

    def _write(self, blobs: dict, name: str, data: bytes, created: float | None = None):
        """Store ``data`` as ``name`` unless a condition fails; the caller holds the lock."""
        existing = blobs.get(name)
        failed = self._condition_fails(existing)
        if failed:
            status = {"BlobAlreadyExists": 409, "BlobNotFound": 404}.get(failed, 412)
            return self._send(status, error=failed)
        b = blobs[name] = _Blob(data, self._metadata(), existing.created if existing else created)
        self.store.staged.pop((self._route()[1], name), None)
        md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
        return self._send(201, headers={"ETag": b.etag, "Last-Modified": _http_date(b.modified),
                                        "Content-MD5": md5, "x-ms-request-server-encrypted": "true"})

    def _lease(self, container: str, name: str, existing: _Blob | None):
        """Acquire, renew, release or break a blob's lease (the caller holds the lock)."""
        if existing is None:
            return self._send(404, error="BlobNotFound")
        leases, key = self.store.leases, (container, name)
        action = (self.headers.get("x-ms-lease-action") or "").lower()
        held, given = leases.get(key), self.headers.get("x-ms-lease-id")
        if action == "acquire":
            if held is not None and held != self.headers.get("x-ms-proposed-lease-id"):
                return self._send(409, error="LeaseAlreadyPresent")
            lease = leases[key] = self.headers.get("x-ms-proposed-lease-id") or str(uuid.uuid4())
            return self._send(201, headers={"x-ms-lease-id": lease, "ETag": existing.etag})
        if action in ("renew", "release", "change"):
            if held is None or held != given:
                return self._send(409, error="LeaseIdMismatchWithLeaseOperation")
            if action == "release":
                del leases[key]
            return self._send(200, headers={"x-ms-lease-id": held, "ETag": existing.etag})
        if action == "break":
            leases.pop(key, None)
            return self._send(202, headers={"x-ms-lease-time": "0", "ETag": existing.etag})
        return self._send(400, error="InvalidHeaderValue")

    def _blob(self, container: str, name: str, query: dict, body: bytes):
        store = self.store
        comp = query.get("comp", "")
        with store.lock:
            blobs = store.containers.get(container)
            if blobs is None:
                return self._send(404, error="ContainerNotFound")
            existing = blobs.get(name)
            if self.command == "PUT" and comp == "block":
                store.staged.setdefault((container, name), {})[query["blockid"]] = body
                return self._send(201, headers={"x-ms-request-server-encrypted": "true"})
            if self.command == "PUT" and comp == "blocklist":
                staged = store.staged.get((container, name), {})
                data = []
                for element in ElementTree.fromstring(body):
                    block = staged.get(element.text or "")
                    if block is None:
                        return self._send(400, error="InvalidBlockList")
                    data.append(block)
                return self._write(blobs, name, b"".join(data))
            if self.command == "PUT" and comp == "lease":
                return self._lease(container, name, existing)
            if self.command == "PUT" and comp == "metadata":
                if existing is None:
                    return self._send(404, error="BlobNotFound")
                existing.metadata = self._metadata()
                return self._send(200, headers={"ETag": existing.etag})
            if self.command == "PUT" and comp in ("", "properties"):
                if comp == "properties":
                    if existing is None:
                        return self._send(404, error="BlobNotFound")
                    return self._send(200, headers={"ETag": existing.etag})
                source = self.headers.get("x-ms-copy-source")
                if source:
                    src_parts = unquote(urlsplit(source).path).lstrip("/").split("/", 2) + ["", ""]
                    src_container, src_name = src_parts[1], src_parts[2]
                    src = store.containers.get(src_container, {}).get(src_name)
                    if src is None:
                        return self._send(404, error="CannotVerifyCopySource")
                    failed = self._condition_fails(existing)
                    if failed:
                        return self._send(409 if failed == "BlobAlreadyExists" else 412, error=failed)
                    b = blobs[name] = _Blob(src.data, dict(src.metadata))
                    return self._send(202, headers={"ETag": b.etag, "Last-Modified": _http_date(b.modified),
                                                    "x-ms-copy-id": str(uuid.uuid4()), "x-ms-copy-status": "success"})
                return self._write(blobs, name, body)
            if self.command == "DELETE":
                if existing is None:
                    return self._send(404, error="BlobNotFound")
                failed = self._condition_fails(existing)
                if failed:
                    return self._send(412, error=failed)
                held = store.leases.get((container, name))
                if held is not None and held != self.headers.get("x-ms-lease-id"):
                    return self._send(412, error="LeaseIdMissing")
                store.leases.pop((container, name), None)
                del blobs[name]
                store.staged.pop((container, name), None)
                return self._send(202)
            if self.command == "GET" and comp == "blocklist":
                committed = "" if existing is None else \
                    f"<Block><Name>{base64.b64encode(b'whole').decode()}</Name><Size>{len(existing.data)}</Size></Block>"
                xml = (f'<?xml version="1.0" encoding="utf-8"?><BlockList><CommittedBlocks>{committed}'
                       f"</CommittedBlocks><UncommittedBlocks/></BlockList>")
                return self._send(200, xml.encode(), {"Content-Type": "application/xml"})
            if self.command not in ("GET", "HEAD"):
                return self._send(400, error="UnsupportedHttpVerb")
            if existing is None:
                return self._send(404, error="BlobNotFound")
            failed = self._condition_fails(existing)
            if failed:
                return self._send(412 if self.headers.get("If-Match") else 304, error=failed)
            data, headers = existing.data, self._props(existing)
        if self.command == "HEAD":
            headers["Content-Length"] = str(len(data))
            return self._send(200, headers=headers)
        rng = self.headers.get("x-ms-range") or self.headers.get("Range")
        faulted = self._faulted(container, name) if rng else False
        if faulted == "whole":
            return self._send(200, data, headers)
        if faulted:
            return None
        if rng:
            first, _, last = rng.split("=", 1)[1].partition("-")
            first = int(first)
            last = min(int(last) if last else len(data) - 1, len(data) - 1)
            if first >= len(data):
                return self._send(416, error="InvalidRange")
            headers["Content-Range"] = f"bytes {first}-{last}/{len(data)}"
            return self._send(206, data[first:last + 1], headers)
        return self._send(200, data, headers)


def _serve(port: int, latency_ms: float) -> None:
    _Handler.store = _Store()
    _Handler.latency = latency_ms / 1000
    server = ThreadingHTTPServer(("127.0.0.1", port), _Handler)
    server.daemon_threads = True
    server.serve_forever()


def connection_string(endpoint: str) -> str:
    return (f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
            f"BlobEndpoint={endpoint}/{ACCOUNT};")


class AzureServer:
    """A running server: its ``endpoint``, the ``connection_string`` that names it, and
    its request log and fault switch."""

    def __init__(self, endpoint: str):
        self.endpoint = endpoint
        self.connection_string = connection_string(endpoint)

    def _call(self, method: str, path: str) -> bytes:
        req = urllib.request.Request(f"{self.endpoint}{path}", method=method)
        with urllib.request.urlopen(req, timeout=10) as answer:
            return answer.read()

    def requests(self, name: str = "") -> list:
        """``[method, path, status, body bytes]`` of each request answered so far whose
        path holds ``name`` (status 0: its connection was dropped)."""
        return [r for r in json.loads(self._call("GET", "/__log")) if name in unquote(r[1])]

    def reset_log(self) -> None:
        self._call("DELETE", "/__log")

    def fault(self, kind: str | None, name: str = "", times: int = 1, seconds: float = 0) -> None:
        """Answer the next ``times`` ranged reads of ``container/name`` with ``kind``
        (``503``, ``reset``: the connection dropped, ``stall``: ``seconds`` late, ``whole``:
        the whole blob, as a server ignoring the range answers); None clears it."""
        if kind is None:
            self._call("DELETE", "/__fault")
        else:
            self._call("PUT", f"/__fault?kind={kind}&name={name}&times={times}&seconds={seconds}")


@contextlib.contextmanager
def azure_server(*containers: str, latency_ms: float = 0):
    """A Blob REST server on 127.0.0.1 with ``containers``, and
    ``AZURE_STORAGE_CONNECTION_STRING`` naming it: yields its :class:`AzureServer`
    (the account is the first segment of its paths). Undone after."""
    port = free_port()
    endpoint = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--port", str(port),
                             "--latency-ms", str(latency_ms)],
                            stdout=subprocess.DEVNULL, stderr=None if os.environ.get("RCFMT_AZURE_TEST_LOG") else subprocess.DEVNULL)
    saved = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    try:
        wait_until_serving(f"{endpoint}/{ACCOUNT}?comp=list", proc, "the Azure test server")
        for container in containers:
            req = urllib.request.Request(f"{endpoint}/{ACCOUNT}/{container}?restype=container", method="PUT")
            urllib.request.urlopen(req, timeout=5).close()
        os.environ["AZURE_STORAGE_CONNECTION_STRING"] = connection_string(endpoint)
        yield AzureServer(endpoint)
    finally:
        if saved is None:
            os.environ.pop("AZURE_STORAGE_CONNECTION_STRING", None)
        else:
            os.environ["AZURE_STORAGE_CONNECTION_STRING"] = saved
        stop(proc)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--latency-ms", type=float, default=0)
    args = parser.parse_args()
    _serve(args.port, args.latency_ms)
