#!/bin/bash
# rankscope-analyze mcp with the official MCP TypeScript SDK's client (sdk_client.mjs): every
# tool on a synthetic recording with a straggler (CPU contention on node2), one with a hang
# (a rank of node1 never enters a collective), both merged, and one node's bundle; the
# findings must equal `rankscope-analyze report --format json`'s.
#   sdk_client_test.sh BUILD_DIR
set -euo pipefail
src=$(cd "$(dirname "$0")" && pwd)
build=$(cd "$1" && pwd)
analyze=$build/analyzer/rankscope-analyze
source "$src/npm_setup.sh"
mcp_npm_setup "$src" "$build/tests/mcp"
dir=$(mktemp -d "${TMPDIR:-/tmp}/rankscope-mcp-sdk-XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/cpu" "$dir/hang"
"$build/tests/support/make-synth-cluster" "$dir/cpu" --fault cpu --fault-node 2 --seed 11 > /dev/null
"$build/tests/support/make-synth-cluster" "$dir/hang" --fault hang --fault-node 1 --seed 11 > /dev/null
for r in cpu hang; do
  "$build/merger/rankscope-merge" -q -o "$dir/$r.rsdb" "$dir/$r"
  "$analyze" report "$dir/$r.rsdb" --format json -o "$dir/$r.report.json" 2> /dev/null
done
"$analyze" report "$dir/hang/node1.rsb" --format json -o "$dir/node1.report.json" 2> /dev/null
mkdir "$dir/traces"
node "$NPM_DIR/sdk_client.mjs" "$analyze" "$dir"
