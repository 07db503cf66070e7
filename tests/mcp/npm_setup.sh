# Sourced by the MCP tests that run Node.js clients: installs the packages pinned in
# tests/mcp/package-lock.json (npm ci: exact versions, integrity checked, no install scripts)
# once into BUILD/tests/mcp/npm, shared by the tests (flock), and copies the test scripts there
# (Node resolves packages from a script's own directory).
# Without node and npm, or when the install fails: the test is skipped (exit 77), and fails
# where CI is set.
mcp_npm_setup() {  # SOURCE_DIR BUILD_DIR; sets NPM_DIR
  local src=$1 dir=$2/npm
  _mcp_give_up() {
    if [[ -n "${CI:-}" ]]; then echo "FAIL: $1"; exit 1; fi
    echo "SKIP: $1"
    exit 77
  }
  command -v node > /dev/null && command -v npm > /dev/null ||
    _mcp_give_up "node and npm are needed (Node.js 20 or later)"
  mkdir -p "$dir"
  if ! (
    flock 9
    if ! cmp -s "$src/package-lock.json" "$dir/installed-lock.json"; then
      rm -f "$dir/installed-lock.json"
      cp "$src/package.json" "$src/package-lock.json" "$dir/"
      (cd "$dir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) >&2 || exit 1
      cp "$src/package-lock.json" "$dir/installed-lock.json"
    fi
  ) 9> "$dir/.lock"; then
    _mcp_give_up "npm ci of tests/mcp/package-lock.json failed (the npm registry unreachable?)"
  fi
  cp "$src"/*.mjs "$dir/"
  NPM_DIR=$dir
}
