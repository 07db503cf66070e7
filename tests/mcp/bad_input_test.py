#!/usr/bin/env python3
"""rankscope-analyze mcp fed raw JSON-RPC lines, good and bad, as a client would send them.

Malformed JSON, batches, unknown methods and tools, wrong argument types, writing queries, a
message over the size limit, bytes that are not UTF-8 and a huge result get the protocol's error
codes or tool errors; the server answers a ping after each, writes nothing but JSON-RPC lines on
standard output, negotiates older protocol revisions, and exits 0 at the end of its input.

  bad_input_test.py BUILD_DIR
"""
import json
import os
import select
import subprocess
import sys
import tempfile
import time

build = sys.argv[1]
analyze = os.path.join(build, "analyzer", "rankscope-analyze")
synth = os.path.join(build, "tests", "support", "make-synth-cluster")
passed = 0


def ok(what):
    global passed
    passed += 1
    print(f"ok {passed} - {what}", flush=True)


class Server:
    def __init__(self, *args):
        self.p = subprocess.Popen([analyze, "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.buf = b""
        self.next_id = 100

    def send(self, data):
        if isinstance(data, (dict, list)):
            data = json.dumps(data)
        if isinstance(data, str):
            data = data.encode()
        self.p.stdin.write(data + b"\n")
        self.p.stdin.flush()

    def read(self, timeout=60):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            assert left > 0, "no reply in time"
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 1 << 20)
                assert chunk, "the server closed its output: " + self.p.stderr.read().decode()
                self.buf += chunk
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)  # every line must be JSON

    def request(self, method, params=None):
        self.next_id += 1
        msg = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        reply = self.read()
        assert reply.get("id") == self.next_id, reply
        return reply

    def call(self, tool, arguments):
        reply = self.request("tools/call", {"name": tool, "arguments": arguments})
        assert "result" in reply, reply
        return reply["result"]

    def ping(self):
        assert self.request("ping")["result"] == {}

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=30)
        rest = self.p.stdout.read()
        return rc, self.buf + rest, self.p.stderr.read().decode()


def error_of(reply):
    assert "error" in reply, reply
    return reply["error"]["code"], reply["error"]["message"]


with tempfile.TemporaryDirectory() as d:
    subprocess.run([synth, d, "--nodes", "2", "--steps", "20", "--seed", "5"], check=True,
                   stdout=subprocess.DEVNULL)
    bundle = os.path.join(d, "node0.rsb")

    # The command line.
    r = subprocess.run([analyze, "mcp", "--help"], capture_output=True, text=True)
    assert r.returncode == 0 and "--trace-dir" in r.stdout and "exit status" in r.stdout, r
    r = subprocess.run([analyze, "mcp"], capture_output=True, text=True)
    assert r.returncode == 2 and "expected INPUT" in r.stderr, r
    r = subprocess.run([analyze, "mcp", bundle, "--trace-dir", os.path.join(d, "none")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "not a directory" in r.stderr, r
    r = subprocess.run([analyze, "mcp", os.path.join(d, "missing.rsdb")], capture_output=True,
                       text=True, stdin=subprocess.DEVNULL)
    assert r.returncode == 1 and "missing.rsdb" in r.stderr and r.stdout == "", r
    r = subprocess.run([analyze, "mcp", "-"], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2 and "standard input carries the protocol" in r.stderr, r
    ok("command line: --help, no input (2), a missing trace directory (2), a missing input (1), "
       "'-' (2)")

    s = Server(bundle, "--trace-dir", d)
    init = s.request("initialize", {"protocolVersion": "2025-03-26", "capabilities": {},
                                    "clientInfo": {"name": "raw", "version": "0"}})
    assert init["result"]["protocolVersion"] == "2025-03-26", init
    s.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    s.ping()
    ok("initialize 2025-03-26 answered with 2025-03-26; the notification gets no reply")

    tools = s.request("tools/list")["result"]["tools"]
    assert all("outputSchema" not in t for t in tools) and tools[0]["annotations"]["readOnlyHint"]
    result = s.call("summary", {})
    assert "structuredContent" not in result and len(result["content"]) == 2, result
    assert json.loads(result["content"][1]["text"])["db_kind"] == "bundle"
    ok("2025-03-26: no outputSchema, the JSON as a second text")

    init = s.request("initialize", {"protocolVersion": "1999-01-01"})
    assert init["result"]["protocolVersion"] == "2025-11-25", init
    tools = s.request("tools/list")["result"]["tools"]
    assert all("outputSchema" in t for t in tools)
    ok("an unknown revision is answered with the newest, 2025-11-25")

    for line, code in [("{not json", -32700), ('{"jsonrpc":"2.0","id":1,', -32700),
                       (b'{"jsonrpc":"2.0","id":1,"method":"\xff\xfe"}', -32700),
                       ("[1, 2]", -32600), ('"just a string"', -32600),
                       ('{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600),
                       ('{"jsonrpc":"2.0","id":2.5,"method":"ping"}', -32600),
                       ('{"id":3,"method":"ping"}', -32600)]:
        s.send(line)
        got, message = error_of(s.read())
        assert got == code, (line, got, message)
        s.ping()
    ok("malformed JSON and invalid requests: -32700 / -32600, then a ping")

    assert error_of(s.request("frobnicate"))[0] == -32601
    assert error_of(s.request("tools/call", [1, 2]))[0] == -32602
    assert error_of(s.request("initialize", {}))[0] == -32602
    code, message = error_of(s.request("tools/call", {"name": "nope", "arguments": {}}))
    assert code == -32602 and "summary" in message, message
    assert error_of(s.request("resources/read", {"uri": "file:///etc/passwd"}))[0] == -32002
    s.ping()
    ok("unknown method -32601; bad params, unknown tool -32602; unknown resource -32002")

    # A notification and a response of the client's get no reply: the next reply is the ping's.
    s.send({"jsonrpc": "2.0", "method": "notifications/whatever"})
    s.send({"jsonrpc": "2.0", "id": 77, "result": {}})
    s.ping()
    ok("unknown notifications and stray responses are not answered")

    for args, expect in [({"comm": [1], "seq": 1}, "argument 'comm' must be a string or an integer"),
                         ({"comm": "0x1", "seq": "x"}, "argument 'seq' must be an integer"),
                         ({"comm": "0x1"}, "argument 'seq' is required"),
                         ({"comm": "0x1", "seq": -1}, "from 0 to"),
                         ({"comm": "0x1", "seq": 1, "extra": 1}, "unknown argument 'extra'")]:
        result = s.call("explain_collective", args)
        assert result["isError"] and expect in result["content"][0]["text"], (args, result)
    result = s.call("node_timeline", {"node": "nodeX"})
    assert result["isError"] and "its nodes are node0" in result["content"][0]["text"], result
    s.ping()
    ok("wrong argument types, missing and unknown arguments, an unknown node: tool errors")

    for sql, expect in [("INSERT INTO metadata VALUES ('k', 'v')", "INSERT is not allowed"),
                        ("DROP TABLE nccl_events", "DROP TABLE is not allowed"),
                        ("ATTACH DATABASE '/tmp/x.db' AS x", "ATTACH is not allowed"),
                        ("PRAGMA writable_schema = 1", "PRAGMA writable_schema is not allowed"),
                        ("SELECT load_extension('x')", "load_extension() is not allowed"),
                        ("UPDATE nccl_events SET rank = 0", "UPDATE is not allowed")]:
        result = s.call("query", {"sql": sql})
        assert result["isError"] and expect in result["content"][0]["text"], (sql, result)
    s.ping()
    ok("writing queries refused with the reason")

    s.send(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"pad":"' + b"x" * (5 << 20) +
           b'"}}')
    code, message = error_of(s.read())
    assert code == -32600 and "4 MiB" in message, message
    s.ping()
    ok("a message over 4 MiB is refused unread")

    s.send('{"jsonrpc":"2.0","id":6,"method":"ping","params":{"x":' + "[" * 100000 +
           "]" * 100000 + "}}")
    assert s.read() == {"jsonrpc": "2.0", "id": 6, "result": {}}
    ok("deeply nested params do not crash the server")

    s.request("initialize", {"protocolVersion": "2025-11-25"})
    s.send({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "query",
            "arguments": {"sql": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 "
                                 "FROM c LIMIT 1000000) SELECT x, printf('%.2000c', 'z') FROM c",
                          "limit": 1000}}})
    big = s.read()
    sc = big["result"]["structuredContent"]
    assert sc["truncated"] and sc["row_count"] < 1000 and "hint" in sc, sc["row_count"]
    assert len(json.dumps(sc)) <= 200000
    s.ping()
    ok(f"a huge result is cut to {sc['row_count']} rows, truncated, with a hint")

    rc, rest, log = s.close()
    assert rc == 0, (rc, log)
    assert rest.strip() == b"", rest
    assert "standard input closed" in log, log
    ok("end of input: exit 0, standard output held only JSON-RPC lines")

print(f"{passed} passed, 0 failed")
