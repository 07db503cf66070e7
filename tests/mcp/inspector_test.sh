#!/bin/bash
# The MCP Inspector's command-line mode (@modelcontextprotocol/inspector-cli, pinned) against
# rankscope-analyze mcp: it connects over stdio and lists the tools and resources, and calls one
# tool. (The Inspector's current line, 2.x, needs Node.js 22; this is its 1.x CLI, which runs
# on the Node.js 20 of these machines.)
#   inspector_test.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
analyze=$build/analyzer/rankscope-analyze
source "$src/npm_setup.sh"
mcp_npm_setup "$src" "$build/tests/mcp"
dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-mcp-inspector-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$build/tests/support/make-synth-cluster" "$dir" --nodes 2 --steps 20 --seed 3 > /dev/null
# The server's command line as one program: the Inspector's variadic options would take its
# arguments for theirs.
printf '#!/bin/sh\nexec "%s" mcp "%s" --trace-dir "%s"\n' "$analyze" "$dir/node1.rsb" "$dir" \
  > "$dir/server"
chmod +x "$dir/server"
inspector() {
  # Run from its own directory: it finds its package.json by a path relative to the working
  # directory.
  (cd "$NPM_DIR/node_modules/@modelcontextprotocol/inspector-cli/build" &&
    node index.js "$dir/server" "$@")
}
inspector --method tools/list > "$dir/tools.json"
inspector --method resources/list > "$dir/resources.json"
inspector --method tools/call --tool-name node_timeline --tool-arg node=node1 limit=3 \
  > "$dir/call.json"
python3 - "$dir" <<'PY'
import json, sys
d = sys.argv[1]
tools = json.load(open(f"{d}/tools.json"))["tools"]
names = [t["name"] for t in tools]
assert names == ["summary", "find_stragglers", "hang_report", "explain_collective",
                 "slowest_collectives", "node_timeline", "query", "export_trace"], names
for t in tools:
    assert t["inputSchema"]["type"] == "object" and t["outputSchema"]["type"] == "object", t
print("ok 1 - the Inspector lists 8 tools, each with inputSchema and outputSchema")
uris = [r["uri"] for r in json.load(open(f"{d}/resources.json"))["resources"]]
assert uris == ["rankscope://schema", "rankscope://report"], uris
print("ok 2 - the Inspector lists the resources")
call = json.load(open(f"{d}/call.json"))
assert not call.get("isError") and len(call["structuredContent"]["events"]) == 3, call
print("ok 3 - the Inspector calls node_timeline with limit=3: 3 events")
print("3 passed, 0 failed")
PY
