#!/bin/bash
# The bash completion offers every option each tool's --help lists (so the two stay in step),
# and the values of the options that take a fixed set. Needs bash-completion
# (/usr/share/bash-completion/bash_completion); without it: skipped (exit 77), a failure where
# CI is set.
set -u
src=$1 build=$2
lib=/usr/share/bash-completion/bash_completion
if [[ ! -r $lib ]]; then
  if [[ -n "${CI:-}" ]]; then echo "FAIL: bash-completion is not installed"; exit 1; fi
  echo "SKIP: bash-completion is not installed"; exit 77
fi
# shellcheck disable=SC1090
source "$lib"
source "$src/man/completion/rankscope"
fails=0
complete_words() {  # FUNCTION WORD... (the last word is the one being completed)
  local fn=$1
  shift
  COMP_WORDS=("$@")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMP_LINE="${COMP_WORDS[*]}"
  COMP_POINT=${#COMP_LINE}
  COMPREPLY=()
  "$fn" "${COMP_WORDS[0]}" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
  printf '%s\n' "${COMPREPLY[@]}"
}
# The options section of a --help: lines "  -x, --flag ..." or "      --flag ...".
help_flags() { "$@" -h | sed -n '/^options:$/,/^$/p' | grep -o -E '^ +(-[a-z], )?--[a-z-]+' |
  grep -o -E -- '--[a-z-]+'; }
check() {  # FUNCTION "COMMAND..." [SUBCOMMAND [FEWEST OPTIONS (default 3)]]
  local fn=$1 cmd=$2 sub=${3:-} offered flag
  if [[ -n $sub ]]; then
    offered=$(complete_words "$fn" "${cmd##*/}" "$sub" "--")
  else
    offered=$(complete_words "$fn" "${cmd##*/}" "--")
  fi
  local n=0
  while read -r flag; do
    n=$((n + 1))
    grep -q -x -- "$flag" <<<"$offered" || { echo "FAIL: ${cmd##*/} $sub: $flag not completed"; fails=$((fails + 1)); }
  done < <(help_flags $cmd $sub)
  ((n >= ${4:-3})) || { echo "FAIL: ${cmd##*/} $sub: no options read from --help"; fails=$((fails + 1)); }
}
check _rankscope_record "$build/recorder/rankscope-record"
check _rankscope_merge "$build/merger/rankscope-merge"
check _rankscope_analyze "$build/analyzer/rankscope-analyze" query
check _rankscope_analyze "$build/analyzer/rankscope-analyze" report
check _rankscope_analyze "$build/analyzer/rankscope-analyze" schema 2
check _rankscope_analyze "$build/analyzer/rankscope-analyze" diff 3
check _rankscope_analyze "$build/analyzer/rankscope-analyze" mcp
check _rankscope_analyze "$build/analyzer/rankscope-analyze" summarize 3
check _rankscope_export "$build/exporter/rankscope-export"
if [[ -x "$build/analyzer/fleet/rankscope-fleet" ]]; then
  check _rankscope_fleet "$build/analyzer/fleet/rankscope-fleet" query
  check _rankscope_fleet "$build/analyzer/fleet/rankscope-fleet" collect
  check _rankscope_serve "$build/recorder/serve/rankscope-serve"
  [[ "$(complete_words _rankscope_fleet rankscope-fleet "" | sort | tr '\n' ' ')" == *"collect query"* ]] ||
    { echo "FAIL: fleet's commands"; fails=$((fails + 1)); }
  [[ "$(complete_words _rankscope_fleet rankscope-fleet query --format "" | sort | tr '\n' ' ')" == "csv json table " ]] ||
    { echo "FAIL: fleet query --format values"; fails=$((fails + 1)); }
elif [[ -n "${CI:-}" ]]; then
  echo "FAIL: rankscope-fleet is not built (cpp-httplib and OpenSSL are in .ci/install-deps)"
  fails=$((fails + 1))
fi
# Values of the options that take a fixed set, and the subcommands.
[[ "$(complete_words _rankscope_analyze rankscope-analyze "" | sort | tr '\n' ' ')" == *"diff mcp query report"* ]] ||
  { echo "FAIL: analyze's commands"; fails=$((fails + 1)); }
[[ "$(complete_words _rankscope_analyze rankscope-analyze report x.rsdb --fail-on "" | sort | tr '\n' ' ')" == "any hang straggler " ]] ||
  { echo "FAIL: report --fail-on values"; fails=$((fails + 1)); }
[[ "$(complete_words _rankscope_export rankscope-export x.rsdb --format "" | sort | tr '\n' ' ')" == "chrome-json perfetto " ]] ||
  { echo "FAIL: export --format values"; fails=$((fails + 1)); }
((fails)) && { echo "$fails failure(s)"; exit 1; }
echo "PASS"
