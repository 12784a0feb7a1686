#!/bin/sh
# e2e_manual.sh — the manual pages say what the programs do: llmchat --help and
# llmchat.1's OPTIONS list the same options (long names and short letters), the
# config keys --help lists are the ones llmchat.1's CONFIGURATION documents, every
# environment variable the source reads is in its manual's ENVIRONMENT, and
# llmchat-fetch --help and llmchat-fetch.1 list the same options. A side that lacks
# one fails the test, naming it.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MAN=$LLMCHAT_SRCDIR/man

run_llmchat --help </dev/null
assert_status 0
cp "$T/out" "$T/help"
sh "$LLMCHAT_SRCDIR/scripts/llmchat-fetch" --help >"$T/fetch-help" 2>&1 ||
    fail "llmchat-fetch --help exited $?"

"$PYTHON" - "$T/help" "$MAN/llmchat.1" "$T/fetch-help" "$MAN/llmchat-fetch.1" <<'PYEOF' || fail "the manual and --help disagree (above)"
import re, sys

def help_options(path):
    """{long: short or ''} from the option lines of a --help text."""
    opts = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^  -(\w), --([a-z0-9-]+)", line) or re.match(r"^      --()([a-z0-9-]+)", line)
        if m:
            opts[m.group(2)] = m.group(1)
    return opts

def section(path, name):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^\.Sh %s\n(.*?)(?=^\.Sh )" % re.escape(name), text, re.S | re.M)
    if not m:
        sys.exit("%s has no %s section" % (path, name))
    return m.group(1)

def man_options(path):
    """{long: short or ''} from the .It lines of a manual's OPTIONS."""
    opts = {}
    for line in section(path, "OPTIONS").splitlines():
        m = re.match(r"^\.It Fl (\w) , -([a-z0-9-]+)", line) or re.match(r"^\.It Fl -()([a-z0-9-]+)", line)
        if m:
            opts[m.group(2)] = m.group(1)
    return opts

def compare(what, helps, mans):
    bad = False
    for o in sorted(set(helps) - set(mans)):
        print("%s: --%s is in --help but not in the manual's OPTIONS" % (what, o)); bad = True
    for o in sorted(set(mans) - set(helps)):
        print("%s: --%s is in the manual's OPTIONS but not in --help" % (what, o)); bad = True
    for o in sorted(set(helps) & set(mans)):
        if helps[o] != mans[o]:
            print("%s: --%s has short option '%s' in --help, '%s' in the manual" % (what, o, helps[o], mans[o])); bad = True
    if not helps:
        print("%s: no options found in --help" % what); bad = True
    return bad

bad = compare("llmchat", help_options(sys.argv[1]), man_options(sys.argv[2]))
bad |= compare("llmchat-fetch", help_options(sys.argv[3]), man_options(sys.argv[4]))

# config keys: the paragraph after "Keys:" in --help, the .It Cm lines of CONFIGURATION
help_text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"Keys:\n(.*?)\n\n", help_text, re.S)
help_keys = set(m.group(1).split()) if m else set()
man_keys = set(re.findall(r"^\.It Cm ([a-z0-9-]+)$", section(sys.argv[2], "CONFIGURATION"), re.M))
for k in sorted(help_keys - man_keys):
    print("config key '%s' is in --help but not in the manual's CONFIGURATION" % k); bad = True
for k in sorted(man_keys - help_keys):
    print("config key '%s' is in the manual's CONFIGURATION but not in --help" % k); bad = True
if not help_keys:
    print("--help lists no config keys"); bad = True
helps = help_options(sys.argv[1])
for k in sorted(help_keys - set(helps)):
    print("config key '%s' is not a long option" % k); bad = True
sys.exit(1 if bad else 0)
PYEOF
pass "llmchat --help, llmchat.1 and llmchat-fetch.1 list the same options and config keys"

# The live settings' defaults: what /set shows in a fresh chat (no config file), what
# --help says after "(default" and what llmchat.1's OPTIONS item says ("Default 0.9",
# "0 (the default)") are the same numbers; a default the program chooses as it starts
# (the seed, the step limit by mode) is given in words by --help, and each number in
# those words is in the manual's item. The CHAT COMMANDS' /set lists the settings in
# the program's order. Every other option whose --help states a number as its default
# states the same number in the manual.
printf '%s\n' '/set' '/set no-such-setting 1' >"$T/set-in"
run_llmchat -m chat "$BUNDLED/chat260K_q80.bin" <"$T/set-in"
assert_status 0
cp "$T/err" "$T/set-said"
"$PYTHON" - "$T/help" "$MAN/llmchat.1" "$T/set-said" <<'PYEOF' || fail "the settings' defaults in /set, --help and llmchat.1 disagree (above)"
import re, sys
help_path, man_path, said_path = sys.argv[1:4]
said = open(said_path, encoding="utf-8").read()
m = re.search(r"unknown setting 'no-such-setting': one of (.*)", said)
if not m:
    sys.exit("no list of settings in what /set said: %s" % said)
names = m.group(1).strip().split(", ")
m = re.search(r"^llmchat: (temperature .*)$", said, re.M)
if not m:
    sys.exit("/set alone showed no settings: %s" % said)
shown = dict(zip(*[iter(m.group(1).split())] * 2))

def help_texts(path):
    """{long option: its --help text on one line}"""
    texts, name = {}, None
    for line in open(path, encoding="utf-8"):
        m = re.match(r"^  (?:-\w, |    )--([a-z0-9-]+)(?: \S+)?(?:\s+(.*))?$", line)
        if m:
            name = m.group(1)
            texts[name] = (m.group(2) or "").strip()
        elif name and line.startswith(" " * 26) and line.strip():
            texts[name] += " " + line.strip()
        else:
            name = None
    return texts

def man_items(path):
    """{long option: the text of its OPTIONS item, macros' names dropped}"""
    text = open(path, encoding="utf-8").read()
    sec = re.search(r"^\.Sh OPTIONS\n(.*?)(?=^\.Sh )", text, re.S | re.M).group(1)
    items = {}
    for m in re.finditer(r"^\.It Fl (?:\w , )?-([a-z0-9-]+).*?\n(.*?)(?=^\.It |^\.El)", sec, re.S | re.M):
        body = re.sub(r"^\.(?:[A-Z][a-z]{1,2} )*", "", m.group(2), flags=re.M)
        items[m.group(1)] = re.sub(r"\s+", " ", body)
    return items, text

NUM = r"-?[0-9][0-9.]*(?:e[+-]?[0-9]+)?"
def man_defaults(item):
    found = re.findall(r"[Dd]efault:? (%s)" % NUM, item)
    found += re.findall(r"(%s) \(the default\)" % NUM, item)
    return [float(x.rstrip(".")) for x in found]
def stated(defaults):
    return ", ".join("%g" % d for d in defaults) or "none"

helps = help_texts(help_path)
items, man = man_items(man_path)
bad = []
for name in names:
    h, item = helps.get(name), items.get(name)
    if h is None or item is None:
        bad.append("setting %s: no --help line or no OPTIONS item" % name); continue
    words = re.search(r"\(default: ([^)]*)\)", h)
    number = re.search(r"\(default (%s)" % NUM, h)
    if words:
        for n in re.findall(NUM, words.group(1)):
            if float(n) not in man_defaults(item) and not re.search(r"\b%s\b" % re.escape(n), item):
                bad.append("--%s: --help's default '%s' has %s, llmchat.1 does not" % (name, words.group(1), n))
    elif number:
        d = float(number.group(1))
        if name in shown and float(shown[name]) != d:
            bad.append("--%s: --help says default %s, /set shows %s" % (name, number.group(1), shown[name]))
        if d not in man_defaults(item):
            bad.append("--%s: --help says default %s, llmchat.1's item says %s" % (name, number.group(1), stated(man_defaults(item))))
    else:
        bad.append("--%s: --help states no default: %s" % (name, h))
for name, h in helps.items():
    number = re.search(r"\(default (%s)[;,)]" % NUM, h)
    if name not in names and number and name in items and float(number.group(1)) not in man_defaults(items[name]):
        bad.append("--%s: --help says default %s, llmchat.1's item says %s" % (name, number.group(1), stated(man_defaults(items[name]))))
m = re.search(r"^\.It Ic /set .*?\n(.*?)\(named as", man, re.S | re.M)
listed = []
for line in m.group(1).splitlines() if m else []:
    if line.startswith(".Cm "):
        listed += line[4:].replace(",", " ").split()
if listed != names:
    bad.append("llmchat.1's /set lists %s; the program's settings are %s" % (", ".join(listed), ", ".join(names)))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PYEOF
pass "the settings' defaults in /set, --help and llmchat.1 agree, and llmchat.1's /set lists them"

# Every environment variable the programs read is documented in their manual.
"$PYTHON" - "$LLMCHAT_SRCDIR" <<'PYEOF' || fail "undocumented environment variables (above)"
import glob, os, re, sys
src = sys.argv[1]
def documented(man):
    text = open(os.path.join(src, "man", man), encoding="utf-8").read()
    m = re.search(r"^\.Sh ENVIRONMENT\n(.*?)(?=^\.Sh )", text, re.S | re.M)
    names = set()
    for line in re.findall(r"^\.It (.*)$", m.group(1), re.M) if m else []:
        names |= set(re.findall(r"\bEv (\w+)", line))
    return names
bad = False
every = glob.glob(os.path.join(src, "src", "**", "*.c"), recursive=True)
tools = os.path.join(src, "src", "tools", "")
groups = [("llmchat.1", [f for f in every if not f.startswith(tools)]),
          ("llmchat-bench.1", glob.glob(os.path.join(src, "src", "tools", "bench", "*.c"))),
          ("llmchat-fetch.1", [os.path.join(src, "scripts", "llmchat-fetch")])]
for man, files in groups:
    docs = documented(man)
    used = set()
    for f in files:
        text = open(f, encoding="utf-8").read()
        used |= set(re.findall(r'getenv\("(\w+)"\)', text))
        if f.endswith("llmchat-fetch"):
            used |= set(re.findall(r"\$\{?(LLMCHAT_\w+|XDG_\w+)", text))
    for v in sorted(used - docs):
        print("%s reads %s, which %s's ENVIRONMENT does not document" % (man.split(".")[0], v, man)); bad = True
sys.exit(1 if bad else 0)
PYEOF
pass "every environment variable the source reads is in its manual's ENVIRONMENT"

# The chat templates and the kernel tables the programs know are the ones the manuals
# and --help list: the names come from the programs' own refusals of an unknown one
# (the aliases in "(or ...)" may be listed too, nothing else may).
run_llmchat --template no-such-template -m tokenize -i x </dev/null
assert_status 2
cp "$T/err" "$T/template-err"
run_llmchat --kernels no-such-table -m tokenize -i x </dev/null
assert_status 2
cp "$T/err" "$T/kernels-err"
BIN_DIR=$(dirname "$LLMCHAT_BIN")
"$BIN_DIR/llmchat-bench" --kernels no-such-table >/dev/null 2>"$T/bench-kernels-err" </dev/null &&
    fail "llmchat-bench --kernels no-such-table was accepted"
"$BIN_DIR/llmchat-bench" --help >"$T/bench-help" 2>&1 </dev/null || fail "llmchat-bench --help exited $?"
"$BIN_DIR/llmchat-convert" --help >"$T/convert-help" 2>&1 </dev/null || fail "llmchat-convert --help exited $?"

"$PYTHON" - "$T" "$MAN" <<'PYEOF' || fail "the manuals or --help list other templates or kernel tables than the programs know (above)"
import os, re, sys
t, man = sys.argv[1], sys.argv[2]
read = lambda name: open(os.path.join(t, name), encoding="utf-8").read()
page = lambda name: open(os.path.join(man, name), encoding="utf-8").read()
bad = []

def choices(msg, what):
    """(names, aliases) from "... must be a, b (or c), d or e, got 'x'", or from
    "... must be one of a | b | c, got 'x'" (no aliases)."""
    m = re.search(r"must be one of (.*), got '", msg)
    if m:
        return set(m.group(1).split(" | ")), set()
    m = re.search(r"must be (.*), got '", msg)
    if not m:
        sys.exit("%s: no list of choices in [%s]" % (what, msg.strip()))
    groups = re.findall(r" \(or ([a-z0-9.-]+(?:, [a-z0-9.-]+)*)\)", m.group(1))
    aliases = {a for g in groups for a in g.split(", ")}
    names = set(re.split(r", | or ", re.sub(r" \(or [a-z0-9., -]+\)", "", m.group(1))))
    return names, aliases

def item(text, head):
    """The lines of the .It entry whose line matches head, up to the next .It."""
    m = re.search(r"^%s\n(.*?)(?=^\.It |^\.El)" % head, text, re.S | re.M)
    if not m:
        sys.exit("no entry /%s/" % head)
    return m.group(1)

MACRO = re.compile(r"^[A-Z][a-z][a-z]?$")
def cm_words(text):
    """Every argument of a Cm macro in mdoc text."""
    words = set()
    for line in text.splitlines():
        if not line.startswith("."):
            continue
        on = False
        for tok in line[1:].split():
            if tok == "Cm":
                on = True
            elif MACRO.match(tok):
                on = False
            elif on and re.match(r"^[a-z0-9][a-z0-9.-]*$", tok):
                words.add(tok)
    return words

def check(what, listed, names, aliases, exact_aliases=False):
    for n in sorted(names - listed):
        bad.append("%s does not list %s" % (what, n))
    for n in sorted(listed - names - aliases):
        bad.append("%s lists %s, which the program does not know" % (what, n))

templates, t_aliases = choices(read("template-err"), "llmchat --template")
kernels, k_aliases = choices(read("kernels-err"), "llmchat --kernels")
llmchat1, convert1, bench1 = page("llmchat.1"), page("llmchat-convert.1"), page("llmchat-bench.1")

check("llmchat.1 --template", cm_words(item(llmchat1, r"\.It Fl -template Ar name")), templates, t_aliases)
check("llmchat.1 CONFIGURATION template", cm_words(item(llmchat1, r"\.It Cm template")), templates, t_aliases)
check("llmchat-convert.1 --template", cm_words(item(convert1, r"\.It Fl -template Ar name")), templates, t_aliases)
for name in ("help", "convert-help"):
    text = re.sub(r"\s+", " ", read(name))
    m = re.search(r"--template NAME .*?template: (.*?) \(default", text)
    if not m:
        bad.append("%s: no --template entry" % name); continue
    listed = set(re.split(r", | or ", re.sub(r" \(([a-z0-9.-]+)\)", "", m.group(1))))
    listed |= set(re.findall(r"\(([a-z0-9.-]+)\)", m.group(1)))
    check("%s --template" % name, listed, templates, t_aliases)

def it_line(text, opt):
    m = re.search(r"^\.It Fl %s Cm (.*)$" % re.escape(opt), text, re.M)
    return set(m.group(1).split(" | ")) if m else set()
check("llmchat.1 --kernels", it_line(llmchat1, "-kernels"), kernels, k_aliases)
check("llmchat.1 CONFIGURATION kernels", cm_words(item(llmchat1, r"\.It Cm kernels")), kernels, k_aliases)
check("llmchat-bench.1 --kernels", it_line(bench1, "-kernels"), kernels, k_aliases)
m = re.search(r"--kernels ISA +(.*?) \(default", re.sub(r"\s+", " ", read("help")))
check("llmchat --help --kernels", set(m.group(1).split(" | ")) if m else set(), kernels, k_aliases)
text = re.sub(r"\s+", " ", read("bench-help"))
m = re.search(r"--kernels NAME force the kernels, one of (.*?) \(default", text)
check("llmchat-bench --help --kernels", set(m.group(1).split(" | ")) if m else set(), kernels, k_aliases)
m = re.search(r"unknown kernel set '[^']*' \((.*)\)", read("bench-kernels-err"))
check("llmchat-bench's refusal of a kernel set", set(m.group(1).split(" | ")) if m else set(), kernels, k_aliases)

for b in bad:
    print(b)
sys.exit(1 if bad else 0)
PYEOF
pass "the chat templates and kernel tables in llmchat.1, llmchat-convert.1, llmchat-bench.1 and --help are the programs'"

# ---- every --help fits an 80-column terminal ----
BIN_DIR=$(dirname "$LLMCHAT_BIN")
"$BIN_DIR/llmchat-bench" --help >"$T/bench-help80" 2>&1 || fail "llmchat-bench --help failed"
"$BIN_DIR/llmchat-convert" --help >"$T/convert-help80" 2>&1 || fail "llmchat-convert --help failed"
"$PYTHON" - "$HOME" "$T/help" "$T/fetch-help" "$T/bench-help80" "$T/convert-help80" <<'PYEOF' || fail "a --help line is wider than 80 columns (above)"
import sys, unicodedata
bad = 0
for path in sys.argv[2:]:
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        line = line.rstrip("\n").replace(sys.argv[1], "~")  # the test's own home is long
        width = sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in line)
        if width > 80:
            print("%s line %d: %d columns: %s" % (path.rsplit("/", 1)[1], n, width, line))
            bad += 1
sys.exit(1 if bad else 0)
PYEOF
pass "llmchat, llmchat-bench, llmchat-convert and llmchat-fetch --help fit 80 columns"

# ---- the README says what and how; dated figures live in docs/ ----
readme="$LLMCHAT_SRCDIR/README.md"
lines=$(wc -l <"$readme")
[ "$lines" -le 250 ] || fail "README.md has $lines lines (at most 250: move detail to docs/)"
# a table row or line with a date (2026-11-28, 11-27) is a measurement: docs/performance.md
if grep -nE '^\|.*\b(20[0-9]{2}-)?(0[1-9]|1[0-2])-[0-3][0-9]\b' "$readme"; then
    fail "README.md carries a dated table row (above): dated figures go to docs/performance.md"
fi
pass "README.md is $lines lines and carries no dated table"
