#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1 OR BSD-2-Clause
# The flame graph SVG in a real browser (Debian's chromium, headless): the
# page's own script runs, and the DOM it leaves is read back with
# --dump-dom. The URL fragment drives the page as a user would
# (#zoom=NAME clicks the first frame named NAME; #search=RE searches),
# so the checks are, from the page itself:
#   - frames are drawn: rect elements of frames with a width > 0;
#   - clicking a frame zooms: its rect then spans the full width, and the
#     frames outside it are hidden;
#   - search highlights: the matching frames' fill becomes the search
#     colour and the page reports the matched share;
#   - the page loads nothing from the network (no http URL in it).
# Uses the recorded tests/data/perf/g.data. Needs chromium; otherwise
# prints "SKIP: reason", exits 77.
set -u
. "$(dirname "$0")/../lib.sh"
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then echo "SKIP: chromium is not installed"; exit 77; fi
tmp=$(mktemp -d /tmp/tk-fg-browser.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
g=$TK_SOURCE_DIR/tests/data/perf/g.data

run flamegraph -o "$tmp/g.svg" "$g"
check "flamegraph writes the SVG" eval 'rc_is 0 && [ -s "$tmp/g.svg" ]'
check "the SVG names no network resource" eval '! grep -Eq "(src|href)=\"https?:" "$tmp/g.svg"'
# The frame to zoom on: the widest non-root frame with a name of its own.
zoom=$(grep -o 'data-n="[^"]*" data-c="[0-9]*" data-d="2"' "$tmp/g.svg" |
	sort -t'"' -k4 -n | tail -1 | sed 's/data-n="\([^"]*\)".*/\1/')

dom() { # FRAGMENT: the DOM after the page's script ran with that URL fragment
	HOME=$tmp timeout 120 "$browser" --headless --no-sandbox --disable-gpu \
		--no-first-run --user-data-dir="$tmp/profile" \
		--dump-dom "file://$tmp/g.svg#$1" 2>"$tmp/chromium.err"
}

dom "" >"$tmp/plain.html"
python3 - "$tmp/plain.html" >"$tmp/plain.txt" <<'PY'
import re, sys
d = open(sys.argv[1]).read()
print("ready" if 'data-ready="1"' in d else "not-ready")
rects = re.findall(r'<g class="f[^"]*"[^>]*>.*?<rect [^>]*width="([0-9.]+)"', d, re.S)
print(sum(1 for w in rects if float(w) > 0))
PY
ready=$(sed -n 1p "$tmp/plain.txt")
drawn=$(sed -n 2p "$tmp/plain.txt")
check "the page's script ran in chromium" eval '[ "$ready" = ready ]'
check "frames are drawn ($drawn rects of width > 0)" eval '[ "${drawn:-0}" -gt 10 ]'

dom "zoom=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$zoom")" \
	>"$tmp/zoom.html"
python3 - "$tmp/zoom.html" "$zoom" >"$tmp/zoom.txt" <<'PY'
import html, re, sys
d, name = open(sys.argv[1]).read(), sys.argv[2]
full = float(re.search(r'data-pw="([0-9.]+)"', d).group(1))
gs = re.findall(r'<g class="(f[^"]*)" data-n="([^"]*)"[^>]*>.*?<rect [^>]*width="([0-9.]+)"', d, re.S)
mine = [float(w) for c, n, w in gs if html.unescape(n) == name and "hide" not in c]
hidden = sum(1 for c, n, w in gs if "hide" in c)
print("%s %s %d" % (full, max(mine) if mine else -1, hidden))
PY
read -r full width hidden <"$tmp/zoom.txt"
check "clicking '$zoom' zooms: its width $width = the full $full" \
	eval 'python3 -c "import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 0.01)" "$width" "$full"'
check "zoomed: frames outside it are hidden ($hidden)" eval '[ "${hidden:-0}" -gt 0 ]'

dom "search=$(python3 -c 'import urllib.parse; print(urllib.parse.quote("^__strcmp|sh$"))')" \
	>"$tmp/search.html"
python3 - "$tmp/search.html" >"$tmp/search.txt" <<'PY'
import re, sys
d = open(sys.argv[1]).read()
gs = re.findall(r'<g class="f[^"]*" data-n="([^"]*)"[^>]*>.*?<rect ([^>]*)>', d, re.S)
hit = [n for n, r in gs if 'fill="rgb(230,0,230)"' in r]
bad = [n for n in hit if not re.search(r"^__strcmp|sh$", n)]
miss = [n for n, r in gs if re.search(r"^__strcmp|sh$", n) and 'fill="rgb(230,0,230)"' not in r]
m = re.search(r'data-matched="([0-9.]+)"', d)
print(len(hit), len(bad), len(miss), m.group(1) if m else "none")
PY
read -r hit bad miss matched <"$tmp/search.txt"
check "search highlights the $hit matching frames, and only those" \
	eval '[ "$hit" -gt 0 ] && [ "$bad" -eq 0 ] && [ "$miss" -eq 0 ]'
check "search reports the matched share ($matched%)" eval '[ "$matched" != none ]'
finish
