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
groups = [("llmchat.1", glob.glob(os.path.join(src, "src", "*.c")) + glob.glob(os.path.join(src, "src", "tui", "*.c"))),
          ("llmchat-bench.1", glob.glob(os.path.join(src, "src", "bench", "*.c"))),
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
