#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The house's size limits on the hand-written C++ (core, net, ui, app, bench, resources,
# tests): no file over 700 lines, no function body over 150 lines.
# A function body is found the way a reader finds one: a line whose code (comments and
# string literals removed) ends a signature with "{" (")", ") const", ") override", ...
# then "{"), that is not a control statement (if/for/while/switch/else/do/try/catch), a
# type, a namespace or a lambda; it runs to the brace that closes it. Lambdas count in
# the function that holds them.
# usage: check-sizes.sh SOURCE_DIR [MAX_FILE_LINES MAX_FUNCTION_LINES]
set -u
src=$1 maxFile=${2:-700} maxFunction=${3:-150}
cd "$src" || exit 2
mapfile -t files < <(find core net ui app bench resources tests -name '*.cpp' -o -name '*.h' | sort)
status=0
for f in "${files[@]}"; do
  n=$(wc -l < "$f")
  if [ "$n" -gt "$maxFile" ]; then echo "sizes: $f: $n lines (over $maxFile)"; status=1; fi
done
long=$(awk -v limit="$maxFunction" '
function strip(s) {
  gsub(/"([^"\\]|\\.)*"/, "\"\"", s)
  gsub(/'"'"'([^'"'"'\\]|\\.)*'"'"'/, "x", s)
  sub(/\/\/.*$/, "", s)
  return s
}
FNR == 1 { depth = 0; start = 0; inraw = 0 }
{
  line = $0
  if (inraw) { if (line ~ /\)"/) inraw = 0; next }
  code = line
  if (code ~ /R"\(/ && code !~ /\)"/) { inraw = 1; sub(/R"\(.*$/, "", code) }
  code = strip(code)
  opens = gsub(/\{/, "{", code); closes = gsub(/\}/, "}", code)
  if (start == 0 && opens > closes && code ~ /(\)|\) *const|\) *override|\) *const *override|\) *noexcept|\) *->[^{]*) *\{ *$/ \
      && code !~ /^[ \t]*(if|for|while|switch|else|do|try|catch|namespace|class|struct|enum|union)[^A-Za-z0-9_]/ \
      && code !~ /\] *\(/ && code !~ /(=|return|,|\() *\[/) {
    start = FNR; startdepth = depth; name = line
  }
  depth += opens - closes
  if (start > 0 && depth <= startdepth) {
    len = FNR - start + 1
    if (len > limit) printf "sizes: %s:%d: a function of %d lines (over %d): %s\n", FILENAME, start, len, limit, name
    start = 0
  }
}' "${files[@]}")
if [ -n "$long" ]; then echo "$long"; status=1; fi
[ $status -eq 0 ] && echo "sizes: ok (${#files[@]} files: none over $maxFile lines, no function over $maxFunction)"
exit $status
