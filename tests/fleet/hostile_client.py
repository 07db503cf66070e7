#!/usr/bin/env python3
"""Hostile clients of a node server (rankscope-serve), for serve_hostile_test.sh.

  hostile_client.py flood HOST PORT HEADERS        one request with HEADERS header fields of
                                                   8 KB each, sent until the server stops it
  hostile_client.py chunked HOST PORT TOKEN MB     POST /v1/query with a chunked body of MB
                                                   MiB and the right token
  hostile_client.py slow HOST PORT N -- CMD...     N clients that send one byte every 3 s (half
                                                   inside the TLS handshake, half in the
                                                   request's headers); once all are connected,
                                                   runs CMD (a valid client) and says whether it
                                                   succeeded while they were still connected,
                                                   then waits for the server to close them

Each prints one line of key=value results. Every wait is bounded.
"""
import select
import socket
import ssl
import subprocess
import sys
import threading
import time


def tls(host, port):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(socket.create_connection((host, port), timeout=30))
    s.settimeout(30)
    return s


def status_of(data):
    parts = data.split(b" ", 2)
    return parts[1].decode() if len(parts) > 1 and data.startswith(b"HTTP/") else "none"


def flood(host, port, headers):
    s = tls(host, port)
    s.sendall(b"GET /v1/time HTTP/1.1\r\nHost: node\r\n")
    line = b"X-Flood: " + b"a" * 8000 + b"\r\n"
    sent = 0
    try:
        for _ in range(headers):
            s.sendall(line)
            sent += len(line)
        s.sendall(b"\r\n")
    except (OSError, ssl.SSLError):
        pass
    reply = b""
    try:
        reply = s.recv(4096)
    except (OSError, ssl.SSLError):
        pass
    print(f"sent={sent} status={status_of(reply)}")


def chunked(host, port, token, mib):
    s = tls(host, port)
    s.sendall(b"POST /v1/query HTTP/1.1\r\nHost: node\r\nAuthorization: Bearer " +
              token.encode() + b"\r\nContent-Type: application/json\r\n"
              b"Transfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n" % 65536 + b" " * 65536 + b"\r\n"
    sent, reply = 0, b""
    try:
        # A reply within 2 s of the headers is a refusal before the body was read (a server
        # that closes after it may reset the connection while the body is still being sent).
        if select.select([s], [], [], 2)[0]:
            reply = s.recv(4096)
        while not reply and sent < mib << 20:
            s.sendall(chunk)
            sent += 65536
            if s.pending() or select.select([s], [], [], 0)[0]:
                reply = s.recv(4096)
        if not reply:
            s.sendall(b"0\r\n\r\n")
            reply = s.recv(4096)
    except (OSError, ssl.SSLError):
        pass
    print(f"sent={sent} status={status_of(reply)}")


class Slow(threading.Thread):
    """Sends one byte every 3 s: of a TLS ClientHello (in_handshake) or, after the handshake,
    of a request's headers."""

    def __init__(self, host, port, in_handshake):
        super().__init__(daemon=True)
        self.host, self.port, self.in_handshake = host, port, in_handshake
        self.started = threading.Event()
        self.closed = False
        self.stop = False

    def open_now(self):
        """True while the server has neither closed the connection nor answered on it (only
        from this client's own thread)."""
        if self.closed:
            return False
        try:
            if self.in_handshake:
                if not select.select([self.sock], [], [], 0)[0]:
                    return True
                self.sock.recv(1, socket.MSG_PEEK)
            else:
                self.sock.setblocking(False)
                try:
                    self.sock.recv(1)
                finally:
                    self.sock.setblocking(True)
            return False  # an answer (408, an alert) or the end of the connection
        except (BlockingIOError, ssl.SSLWantReadError):
            return True
        except (OSError, ssl.SSLError):
            return False

    def run(self):
        try:
            if self.in_handshake:
                self.sock = socket.create_connection((self.host, self.port), timeout=30)
                payload = b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 512
            else:
                self.sock = tls(self.host, self.port)
                payload = b"GET /v1/time HTTP/1.1\r\nHost: node\r\n" + b"X-Slow: a\r\n" * 100
            for i, b in enumerate(payload):
                if self.stop:
                    return
                self.sock.send(bytes([b]))
                self.started.set()
                for _ in range(30):  # 3 s, watching for the end
                    if self.stop:
                        return
                    time.sleep(0.1)
                    if not self.open_now():
                        self.closed = True
                        return
        except (OSError, ssl.SSLError):
            self.closed = True
        finally:
            self.started.set()


def slow(host, port, n, cmd):
    clients = [Slow(host, port, k % 2 == 0) for k in range(n)]
    for c in clients:
        c.start()
    for c in clients:
        c.started.wait(30)
    time.sleep(0.5)
    # Each client's thread watches its own connection (an SSL socket is not shared).
    connected_before = sum(not c.closed for c in clients)
    served = subprocess.run(cmd, stdout=subprocess.DEVNULL, timeout=60).returncode == 0
    time.sleep(0.5)  # each thread has looked at its connection again
    # The slow ones still holding their connection when the valid client was done.
    connected_after = sum(not c.closed for c in clients)
    for _ in range(300):  # the server's deadline closes the rest (30 s at most)
        if all(c.closed for c in clients):
            break
        time.sleep(0.1)
    left_open = sum(not c.closed for c in clients)
    for c in clients:
        c.stop = True
    print(f"connected_before={connected_before} served={int(served)} "
          f"connected_after={connected_after} left_open={left_open}")


def main():
    mode, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if mode == "flood":
        flood(host, port, int(sys.argv[4]))
    elif mode == "chunked":
        chunked(host, port, sys.argv[4], int(sys.argv[5]))
    elif mode == "slow":
        sep = sys.argv.index("--")
        slow(host, port, int(sys.argv[4]), sys.argv[sep + 1:])
    else:
        sys.exit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
