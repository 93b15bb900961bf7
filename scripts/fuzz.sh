#!/usr/bin/env bash
# Runs every fuzz target in the module for the given time each.
set -euo pipefail
# Build tags: the Makefile exports them; run directly, read them from it.
TAGS=${TAGS:-$(sed -n 's/^export TAGS := //p' "$(git rev-parse --show-toplevel)/Makefile")}
t=${1:-3s}
status=0
while IFS= read -r file; do
  pkg=./$(dirname "$file")
  for f in $(grep -oE '^func (Fuzz[A-Za-z0-9_]+)' "$file" | awk '{print $2}'); do
    echo "fuzz $pkg $f ($t)"
    if ! go test -tags "$TAGS" -run '^$' -fuzz "^$f\$" -fuzztime "$t" "$pkg" >/tmp/hookscope-fuzz.log 2>&1; then
      cat /tmp/hookscope-fuzz.log; status=1
    fi
  done
done < <(git ls-files '*_test.go' 2>/dev/null | xargs grep -l '^func Fuzz' || true)
exit $status
