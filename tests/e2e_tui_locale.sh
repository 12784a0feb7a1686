#!/bin/sh
# e2e_tui_locale.sh — the TUI under a locale that writes numbers with a comma
# (de_DE.UTF-8, made with localedef into the test's directory): the TUI takes the
# user's characters from the locale but keeps numbers in the C form, so /set reads
# "0.7", the status line shows "T 0.7", and the trace it writes is JSON whose numbers
# parse (a comma in a number would make every line of it unreadable).
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

need_tool localedef
mkdir -p "$T/loc"
# the locale's definitions come with Debian's locales package (scripts/quickstart installs it)
localedef -i de_DE -f UTF-8 "$T/loc/de_DE.UTF-8" >"$T/localedef.out" 2>&1 ||
    skip "localedef cannot make de_DE.UTF-8 (the locales package is not installed)"
comma=$(env LOCPATH="$T/loc" LC_ALL=de_DE.UTF-8 "$PYTHON" -c \
    'import locale; locale.setlocale(locale.LC_ALL, ""); print(locale.localeconv()["decimal_point"])')
[ "$comma" = "," ] || hard_error "the de_DE.UTF-8 made here writes '$comma' for the decimal point"

MODEL=$BUNDLED/chat260K.bin
TOK=$BUNDLED/tok512.bin

start LOCPATH="$T/loc" LC_ALL=de_DE.UTF-8 LANG=de_DE.UTF-8 -- -m tui -s 3 --trace "$T/t.jsonl" -z "$TOK" "$MODEL"
wait_for "idle |"
type_text "/set temperature 0.7"
keys Enter
wait_for "T 0"
case $(screen) in *"T 0.7 "*) ;; *) show_screen_and_fail "the status line does not show T 0.7" ;; esac
type_text "Tell me a story."
keys Enter
wait_for "Assistant: "
wait_for " idle |"
keys C-d
wait_exit
"$PYTHON" - "$T/t.jsonl" <<'PYEOF' || fail "the trace written under de_DE.UTF-8 is not JSON with the settings given (above)"
import json, sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
records = [json.loads(l) for l in lines]  # raises on a comma in a number
temps = [r["sampler"]["temperature"] for r in records if isinstance(r.get("sampler"), dict)]
assert len(records) > 2, "only %d lines" % len(records)
assert 0.7 in temps, "no sampled record has temperature 0.7: %r" % temps[:5]
PYEOF
pass "under a comma locale /set reads 0.7, the status line and the trace write 0.7"
