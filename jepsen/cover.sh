#!/usr/bin/env bash
# cover.sh DIR: the coverage report and gate of a `make jepsen` run whose
# instrumented storesvr/allocsvr binaries wrote their counters into DIR
# (GOCOVERDIR). Prints the total, the number of functions of storage and
# alloc no scenario reached, and those on the safety paths (lease, fence,
# floor, carry, switch); writes every function's figure to DIR.func.txt
# and the unreached ones to DIR.unreached.txt. Then the gate: every
# function on a serving path, as the routes tables declare them
# (routes.Table.Gated: the fronts' routes, the Leaf API and its 405, the
# per-key fast route, the RPC handlers, the store's reads) must have been
# reached by some scenario; exits 1 if one was not, or is not in the
# profile.
set -euo pipefail
dir=${1:?usage: cover.sh GOCOVERDIR}
pkgs=github.com/seqsvr/seqsvr/storage/...,github.com/seqsvr/seqsvr/alloc/...,github.com/seqsvr/seqsvr/internal/routes
"${GO:-go}" tool covdata percent -i="$dir" -pkg="$pkgs"
"${GO:-go}" tool covdata func -i="$dir" -pkg="$pkgs" | grep -v '^total' > "$dir.func.txt"
awk '$NF == "0.0%" { print $1, $2 }' "$dir.func.txt" > "$dir.unreached.txt"
echo "functions of storage and alloc: $(wc -l < "$dir.func.txt"), reached by no scenario: $(wc -l < "$dir.unreached.txt") (list: $dir.unreached.txt)"
safety=$(grep -Ei 'lease|fence|floor|carry|switch' "$dir.unreached.txt" || true)
if [ -n "$safety" ]; then
	echo "unreached on the safety paths (lease, fence, floor, carry, switch):"
	echo "$safety" | sed 's/^/  /'
else
	echo "unreached on the safety paths (lease, fence, floor, carry, switch): none"
fi
echo "coverage gate (the serving paths the routes tables declare):"
"${GO:-go}" run -tags hashicorpmetrics ./jepsen/cmd/covergate "$dir.func.txt"
