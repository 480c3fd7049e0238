#!/usr/bin/env bash
# SASS opcode counts of the cubins (or shared libraries with embedded cubins) under the given
# folders, one block per kernel file: what the instruction mix of a generated kernel is.
#   bash benchmarks/sass_histogram.sh DIR... > counts.txt
for dir in "$@"; do
  find "$dir" \( -name "*.cubin" -o -name "*.so" \) 2>/dev/null | while read -r f; do
    sass=$(cuobjdump --dump-sass "$f" 2>/dev/null) || continue
    [ -z "$sass" ] && continue
    echo "== $f"
    echo "$sass" | grep -oE '^\s+/\*[0-9a-f]+\*/\s+[A-Z][A-Z0-9._]*' | awk '{print $2}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -40
  done
done
