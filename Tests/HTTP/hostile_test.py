"""Hostile HTTP input against a running intent-gateway (deploy/gateway-check.sh runs it).

Each attack must get a clear 4xx or a closed connection, and the gateway must keep serving a
well-behaved client meanwhile and afterwards: oversized headers and bodies, slowloris-style
slow requests, invalid UTF-8, path traversal in ids, a huge `limit`, and 10,000 idle
connections. Standard library only. Waits are for conditions, with generous limits; no
timing is asserted.

    python3 Tests/HTTP/hostile_test.py --url http://127.0.0.1:PORT --token TOKEN [--idle-timeout S]
"""

import argparse
import json
import resource
import socket
import sys
import time
import urllib.error
import urllib.request

failures = []
passed = 0


def check(condition, what):
    global passed
    if condition:
        passed += 1
        print(f"  ok    {what}", flush=True)
    else:
        failures.append(what)
        print(f"  FAIL  {what}", flush=True)


def raw(host, port, data, timeout=30, read=True):
    """Sends bytes on a fresh connection; returns what came back before the server closed (or b'')."""
    with socket.create_connection((host, port), timeout=timeout) as connection:
        try:
            connection.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass
        if not read:
            return b""
        chunks = []
        try:
            while True:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ConnectionResetError, socket.timeout):
            pass
        return b"".join(chunks)


def status_of(response):
    if not response.startswith(b"HTTP/1."):
        return None
    return int(response.split(b" ", 2)[1])


def served(url, token):
    """A well-behaved request: the gateway still answers it, with its JSON."""
    request = urllib.request.Request(url + "/v1/intents?limit=1", headers={"Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status == 200 and "intents" in json.loads(response.read())
    except (urllib.error.URLError, OSError, ValueError):
        return False


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--token", required=True)
    parser.add_argument("--idle-connections", type=int, default=10000)
    parser.add_argument("--idle-timeout", type=float, default=30, help="the gateway's --idle-timeout")
    arguments = parser.parse_args()
    url, token = arguments.url.rstrip("/"), arguments.token
    host, port = url.split("//")[1].split(":")
    port = int(port)
    auth = f"Authorization: Bearer {token}\r\n".encode()

    print("1. oversized headers and bodies")
    huge_header = b"GET /v1/intents HTTP/1.1\r\nHost: x\r\n" + auth + b"X-Padding: " + b"a" * 200_000 + b"\r\n\r\n"
    answer = raw(host, port, huge_header)
    check(status_of(answer) in (None, 413, 414, 431), f"a 200 KB header: {status_of(answer) or 'closed'}")
    many_headers = b"GET /v1/intents HTTP/1.1\r\nHost: x\r\n" + auth + b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"
    answer = raw(host, port, many_headers)
    check(status_of(answer) in (None, 413, 431), f"5,000 headers: {status_of(answer) or 'closed'}")
    long_url = b"GET /v1/intents/" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
    answer = raw(host, port, long_url)
    check(status_of(answer) in (None, 400, 404, 414, 431), f"a 100 KB URL: {status_of(answer) or 'closed'}")
    big_body = b"POST /v1/intents/SendMessage HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Type: application/json\r\nContent-Length: 10000000\r\n\r\n"
    answer = raw(host, port, big_body + b"{" + b" " * 200_000)
    check(status_of(answer) in (None, 413), f"a 10 MB body: {status_of(answer) or 'closed'}")
    check(served(url, token), "the gateway still serves others")

    print("2. invalid UTF-8, traversal, huge numbers")
    for path, allowed in [
        (b"/v1/intents/%FF%FE", (400,)),
        (b"/v1/intents/\xff\xfe", (400,)),
        (b"/v1/intents/..%2F..%2Fetc%2Fpasswd", (404,)),
        (b"/v1/intents/../../etc/passwd", (404,)),
        (b"/v1/../../../etc/passwd", (404,)),
        (b"/v1/intents?limit=99999999999999999999999", (400,)),
        (b"/v1/intents?limit=-1", (400,)),
        (b"/v1/intents?state=%00", (400,)),
        (b"/v1/intents/x?wait=1e309", (400,)),
    ]:
        answer = raw(host, port, b"GET " + path + b" HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n")
        code = status_of(answer)
        body = answer.split(b"\r\n\r\n", 1)[1] if b"\r\n\r\n" in answer else b""
        # A clear JSON error, and never a file's content (an id is only ever looked up in the store).
        clear = code in allowed and b'"error"' in body and b"root:" not in body
        check(clear or code is None, f"GET {path[:60]!r}: {code or 'closed'}")
    bad_json = b'{"parameters":{"content":"\xff\xfe"}}'
    answer = raw(
        host, port,
        b"POST /v1/intents/SendMessage HTTP/1.1\r\nHost: x\r\n" + auth + b"Content-Type: application/json\r\nContent-Length: "
        + str(len(bad_json)).encode() + b"\r\nConnection: close\r\n\r\n" + bad_json)
    check(status_of(answer) == 400, f"a body with invalid UTF-8: {status_of(answer) or 'closed'}")
    answer = raw(host, port, b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 64)
    check(status_of(answer) in (None, 400), f"a TLS hello on the plain port: {status_of(answer) or 'closed'}")
    answer = raw(host, port, b"BREW /v1/intents HTTP/1.1\r\nHost: x\r\n" + auth + b"Connection: close\r\n\r\n")
    check(status_of(answer) in (400, 405, 501), f"an unknown method: {status_of(answer) or 'closed'}")
    check(served(url, token), "the gateway still serves others")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))

    print("3. slowloris: 500 requests sent a byte at a time")
    slow = []
    for _ in range(500):
        connection = socket.create_connection((host, port), timeout=30)
        connection.sendall(b"GET /v1/intents HTTP/1.1\r\n")
        slow.append(connection)
    for round_ in range(5):
        for connection in slow:
            try:
                connection.send(b"X")
            except OSError:
                pass
    check(served(url, token), "others are served while 500 slow requests dribble in")
    for connection in slow:
        connection.close()

    wanted = min(arguments.idle_connections, hard - 200)
    print(f"4. {wanted} idle connections")
    idle = []
    refused = 0
    for _ in range(wanted):
        try:
            idle.append(socket.create_connection((host, port), timeout=30))
        except OSError:
            refused += 1
    check(len(idle) == wanted, f"{len(idle)} of {wanted} idle connections open ({refused} refused)")
    check(served(url, token), f"others are served while {len(idle)} idle connections are open")
    # The gateway closes idle connections after its idle timeout: each one then reads end-of-file.
    deadline = time.time() + arguments.idle_timeout + 120
    for connection in idle:
        connection.settimeout(max(1, deadline - time.time()))
    closed = 0
    for connection in idle:
        try:
            if connection.recv(1) == b"":
                closed += 1
        except (ConnectionResetError, socket.timeout, OSError):
            closed += 1 if time.time() < deadline else 0
        connection.close()
    check(closed == len(idle), f"the gateway closed {closed} of {len(idle)} idle connections after its idle timeout")
    check(served(url, token), "the gateway still serves others afterwards")

    print(f"hostile HTTP test: {passed} checks passed, {len(failures)} failed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
