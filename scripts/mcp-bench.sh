#!/bin/sh
# The drop-in side by side (issue 14): the reference memory server and
# `memgate mcp --dropin-only`, driven over stdio by the official TypeScript
# client with the same corpus and calls (internal/mcp/testdata/tsclient/kgbench.js).
#
#   scripts/mcp-bench.sh [ENTITIES] [CALLS] [memgate]   (defaults 10000 and 200;
#                                                       a third argument "memgate": memgate alone)
#
# Needs go, node (>= 18) and npm; installs the pinned reference and SDK
# with npm ci the first time. Prints p50/p95 per tool, entities/s, the
# ratios, and a JSON line.
set -eu
entities=${1:-10000}
calls=${2:-200}
only=${3:-}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/memgate" "$root/cmd/memgate"
client="$root/internal/mcp/testdata/tsclient"
[ -d "$client/node_modules/@modelcontextprotocol/server-memory" ] || (cd "$client" && npm ci --no-audit --no-fund >/dev/null)
# One standard agent without a rate limit, as the differential test runs.
printf 'rate_limit:\n  agent: {per_second: 0, burst: 0}\n' >"$tmp/policy.yaml"
export MEMGATE_POLICY="$tmp/policy.yaml" MEMGATE_LOG_LEVEL=warn
"$tmp/memgate" agents create --name bench --trust standard --data-dir "$tmp/data" --json >/dev/null 2>&1 # its output holds tokens
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ //')"
echo "command: scripts/mcp-bench.sh $entities $calls $only"
node "$client/kgbench.js" --memgate "$tmp/memgate" --data-dir "$tmp/data" --agent bench --entities "$entities" --calls "$calls" ${only:+--only "$only"}
