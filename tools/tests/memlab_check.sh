#!/bin/bash
# memlab_check.sh MEMLAB_DIR TRACE...: for each trace, export its last
# heap snapshot to .heapsnapshot, let memlab (@memlab/core in MEMLAB_DIR)
# compute retained sizes, and compare the top 20 roots of `ocaml-memprof
# retainers --bytes` with memlab's, byte for byte.  Last line: "N passed,
# N failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
MP=${OCAML_MEMPROF:-$here/../ocaml-memprof}
ML=$1; shift
pass=0; fail=0
for t in "$@"; do
  hs=$(mktemp --suffix=.heapsnapshot)
  "$MP" retainers --bytes -n 20 --heapsnapshot "$hs" "$t" > "$hs.ours" 2>/dev/null
  awk '/^Top roots/ { on = 1; getline; next } /^$/ { on = 0 } on { r = $1; k = $3; $1 = $2 = $3 = ""; sub(/^ +/, ""); print k " " $0 "\t" r }' "$hs.ours" > "$hs.top"
  (cd "$ML" && NODE_PATH="$ML/node_modules" node "$here/memlab_check.js" "$hs") 2>/dev/null | tr -d '\r' | sed 's/.*\x1b\[K//' > "$hs.memlab"
  n=$(wc -l < "$hs.top")
  bad=$(awk -F'\t' 'NR == FNR { m[$1] = $2; next } !($1 in m) || m[$1] != $2 { print $1 ": ours " $2 ", memlab " ($1 in m ? m[$1] : "missing") }' "$hs.memlab" "$hs.top")
  if [ "$n" -gt 0 ] && [ -z "$bad" ]; then
    pass=$((pass + 1)); echo "ok   memlab: the top $n roots of $(basename "$t") have the same retained sizes"
  else
    fail=$((fail + 1)); echo "FAIL memlab: $(basename "$t"): ${bad:-no roots} " | head -5
  fi
  rm -f "$hs" "$hs.ours" "$hs.top" "$hs.memlab"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
