#!/bin/sh
# e2e_family_names.sh — an architecture is data: no C file of src/ but the family table
# (src/formats/model_family.c) tests a family's name, and neither do the writers of the
# tests' family models (tests/family_gguf.h, tests/make_family_gguf.c,
# tests/ref/make_arch_gguf.py). The names are read from the table itself (the families
# llmchat runs and those it refuses), so a new row is covered. A name is in a condition
# when it is compared (an argument of strcmp, strncmp, memcmp or any function named
# like a comparison: *cmp*, *_is*, is_*, *_eq, *equal*, *match*, *same*; an operand of
# == or !=) or stands as an operand of if, while, !, && or || itself; in Python, next
# to == or != or in a tuple or list after `in`. A name as data (a table row, a key
# written, a default after ?:) is not. The scanner first proves itself on snippets
# that must and must not count. Fails naming the file, the line and the name.
. "$(dirname "$0")/lib.sh"

"$PYTHON" - "$LLMCHAT_SRCDIR" <<'PY' || fail "a family's name is tested outside the family table (above)"
import os, re, sys
top = sys.argv[1]
src = os.path.join(top, "src")
table = os.path.join(src, "formats", "model_family.c")
names = set(re.findall(r'\.name\s*=\s*"([^"]+)"', open(table, encoding="utf-8").read()))
CMP = re.compile(r'cmp|_is|^is_|_eq$|equal|match|same', re.I)

def strip_comments(t):
    """C text with its comments blanked (strings and line numbers kept)."""
    out, i, n = [], 0, len(t)
    while i < n:
        if t.startswith("/*", i):
            j = t.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', t[i:j]))
            i = j
        elif t.startswith("//", i):
            j = t.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif t[i] in "\"'":
            q, j = t[i], i + 1
            while j < n and t[j] != q:
                j += 2 if t[j] == "\\" else 1
            out.append(t[i:j + 1])
            i = j + 1
        else:
            out.append(t[i])
            i += 1
    return "".join(out)

def why(code, s, e):
    """Why the string literal code[s:e] is in a condition, or None."""
    if code[:s].rstrip().endswith(("==", "!=")) or code[e:].lstrip().startswith(("==", "!=")):
        return "compared with == or !="
    depth, direct, i = 0, True, s - 1
    while i >= 0:
        c = code[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth:
                depth -= 1
            elif c != "(":
                return None                  # an initializer or a block: data
            else:
                m = re.search(r'([A-Za-z_]\w*)\s*$', code[:i])
                word = m.group(1) if m else ""
                if word in ("if", "while", "switch", "for"):
                    return "the condition of " + word if direct else None
                if word and CMP.search(word):
                    return "an argument of " + word + "()"
                if word:
                    direct = False           # data handed to a call: only a comparison counts
        elif depth == 0 and c == ";":
            return None
        elif depth == 0 and direct and c == "?":
            return None                      # a value of ?:, not its condition
        elif depth == 0 and direct and c in "!&|":
            return "an operand of " + c
        i -= 1
    return None

def c_hits(path, text):
    code = strip_comments(text)
    for m in re.finditer(r'"((?:[^"\\\n]|\\.)*)"', code):
        if m.group(1) in names:
            w = why(code, m.start(), m.end())
            if w:
                yield "%s:%d: \"%s\" is %s" % (path, code.count("\n", 0, m.start()) + 1, m.group(1), w)

def py_hits(path, text):
    for n, line in enumerate(text.splitlines(), 1):
        code = re.sub(r'#.*', '', line)
        for m in re.finditer(r"""(['"])([^'"]+)\1""", code):
            if m.group(2) not in names:
                continue
            before, after = code[:m.start()].rstrip(), code[m.end():].lstrip()
            if (before.endswith(("==", "!=")) or after.startswith(("==", "!="))
                    or re.search(r'\bin\s*[(\[][^)\]]*$', before)):
                yield "%s:%d: '%s' is compared" % (path, n, m.group(2))

# ---- the scanner on snippets: what must count, what must not ----
must = ['if (!strcmp(a->name, "gemma2")) x = 1;', 'bool fused = arch_is(s, "phi3");',
        'if (arch.name == "llama") y();', 'z = strncmp(n, "qwen3", 5) == 0 ? 1 : 2;',
        'while (same_family(a, "gemma")) a++;', 'ok = k && !strcasecmp(s, "mamba");',
        'return "qwen2" != name;', 'b = strstr(p, "x") || !strcmp(q, "gemma3");']
must_not = ['json_write_string(f, c->arch.name ? c->arch.name : "llama");',
            'static const row r[] = {{.name = "llama", .act = 1}};',
            'gguf_writer_add_string(w, "tokenizer.ggml.model", "llama");',
            '/* if (!strcmp(x, "llama")) */ y = 2;', 'fail("the llama architecture");',
            'if (!write(w, "phi3")) return;', 'x = f(a, "gemma2") ? "gemma" : "qwen2";']
py_must = ["if a == 'phi3':", "x = a in ('llama', 'phi3')", "if 'gemma2' != s['arch']:"]
py_must_not = ["SHAPES = {'llama': 1}", "make('gemma', out)  # a == 'phi3'"]
bad = []
for snippet in must:
    if not list(c_hits("snippet", snippet)):
        bad.append("the scanner misses a name in a condition: " + snippet)
for snippet in must_not:
    for h in c_hits("snippet", snippet):
        bad.append("the scanner counts a name that is data: " + h + ": " + snippet)
for snippet in py_must:
    if not list(py_hits("snippet", snippet)):
        bad.append("the scanner misses a name in a Python condition: " + snippet)
for snippet in py_must_not:
    for h in py_hits("snippet", snippet):
        bad.append("the scanner counts a Python name that is data: " + h)
if len(names) < 30 or not {"llama", "qwen2", "phi3", "gemma3", "mamba"} <= names:
    bad.append("only %d names read from %s: %s" % (len(names), table, ", ".join(sorted(names))))

# ---- the tree ----
files = []
for dirpath, _, found in os.walk(src):
    files += [os.path.join(dirpath, f) for f in sorted(found) if f.endswith((".c", ".h"))]
files += [os.path.join(top, "tests", f) for f in ("family_gguf.h", "make_family_gguf.c")]
scanned = 0
for path in files:
    if os.path.samefile(path, table):
        continue
    scanned += 1
    bad += c_hits(os.path.relpath(path, top), open(path, encoding="utf-8").read())
writer = os.path.join(top, "tests", "ref", "make_arch_gguf.py")
bad += py_hits(os.path.relpath(writer, top), open(writer, encoding="utf-8").read())
if scanned < 150:
    bad.append("only %d C files found under %s" % (scanned, src))
for b in bad:
    print("  " + b, file=sys.stderr)
print("%d names, %d C files and make_arch_gguf.py scanned" % (len(names), scanned))
sys.exit(1 if bad else 0)
PY
pass "no family's name in a condition outside src/formats/model_family.c"
