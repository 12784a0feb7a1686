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
    aliases = set(re.findall(r" \(or ([a-z0-9-]+)\)", m.group(1)))
    names = set(re.split(r", | or ", re.sub(r" \(or [a-z0-9-]+\)", "", m.group(1))))
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
    listed = set(re.split(r", | or ", re.sub(r" \(([a-z0-9-]+)\)", "", m.group(1))))
    listed |= set(re.findall(r"\(([a-z0-9-]+)\)", m.group(1)))
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
