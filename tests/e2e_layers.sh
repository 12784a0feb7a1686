#!/bin/sh
# e2e_layers.sh — the folders of src/ are the layers, and includes go one way: each
# file includes its own folder's headers and those of the layers below it, by bare
# name (the build gives each layer only those folders: docs/architecture.md), never a
# path that climbs out of its folder. Curses only in src/tui/. Fails naming the file
# and the include.
. "$(dirname "$0")/lib.sh"

"$PYTHON" - "$LLMCHAT_SRCDIR/src" <<'PY' || fail "an include goes against the layers (above)"
import os, re, sys
src = sys.argv[1]
# the folders each layer may include from (its own first)
below = {
    "base": ["base"],
    "kernels": ["kernels", "base"],
    "formats": ["formats", "kernels", "base"],
    "core": ["core", "formats", "kernels", "base"],
    "app": ["app", "core", "formats", "kernels", "base"],
    "cli": ["cli", "app", "core", "formats", "kernels", "base"],
    "tui": ["tui", "app", "core", "formats", "kernels", "base"],
    "tools": ["tools", "app", "core", "formats", "kernels", "base"],
}
headers = {}
for layer in below:
    for dirpath, _, names in os.walk(os.path.join(src, layer)):
        for n in names:
            if n.endswith(".h"):
                headers.setdefault(n, []).append(layer)
bad = []
seen = 0
for dirpath, _, names in os.walk(src):
    rel = os.path.relpath(dirpath, src)
    layer = rel.split(os.sep)[0]
    for n in sorted(names):
        if not n.endswith((".c", ".h")):
            continue
        path = os.path.join(rel, n)
        text = open(os.path.join(dirpath, n), encoding="utf-8").read()
        for inc in re.findall(r'^\s*#\s*include\s+"([^"]+)"', text, re.M):
            seen += 1
            if ".." in inc:
                bad.append(f"{path}: #include \"{inc}\" climbs out of its folder")
                continue
            if layer == "." :          # src/main.c: the program, above every layer
                continue
            if inc == "config.h" or os.path.exists(os.path.join(dirpath, inc)):
                continue
            owners = headers.get(os.path.basename(inc), [])
            if not any(o in below.get(layer, []) for o in owners):
                bad.append(f"{path}: #include \"{inc}\" is from {', '.join(owners) or 'nowhere'},"
                           f" not below {layer}")
        if layer != "tui" and re.search(r'#\s*include\s*<n?cursesw?(/curses)?\.h>', text):
            bad.append(f"{path}: includes curses outside src/tui")
for b in bad:
    print("  " + b, file=sys.stderr)
if seen < 200:
    print(f"  only {seen} includes found under {src}", file=sys.stderr)
    sys.exit(1)
sys.exit(1 if bad else 0)
PY
pass "every include in src/ goes down the layers"

# The forward pass never calls the transformer back: forward.c calls no function that
# transformer.c defines (both work in pass_state.c's buffers; transformer.c calls the pass).
"$PYTHON" - "$LLMCHAT_SRCDIR/src/core" <<'PY' || fail "forward.c calls back into transformer.c (above)"
import os, re, sys
core = sys.argv[1]
def defined(path):
    text = open(os.path.join(core, path), encoding="utf-8").read()
    return set(re.findall(r'^[a-z_][\w \*]*?\b(\w+)\(', text, re.M))
def body(path):
    text = open(os.path.join(core, path), encoding="utf-8").read()
    return re.sub(r'/\*.*?\*/', '', text, flags=re.S)
mine = defined("transformer.c") - {"if", "for", "while", "switch", "return", "sizeof"}
if len(mine) < 10:
    print("  found only %d functions in transformer.c" % len(mine), file=sys.stderr)
    sys.exit(1)
calls = set(re.findall(r'\b(\w+)\s*\(', body("forward.c")))
back = sorted(calls & mine)
for f in back:
    print("  forward.c calls %s(), which transformer.c defines" % f, file=sys.stderr)
sys.exit(1 if back else 0)
PY
pass "forward.c calls nothing of transformer.c: no circle between the pass and the transformer"
