#!/bin/sh
# e2e_gpt_oss_tui.sh — what the debugger shows of gpt-oss's layers, driven in tmux as a
# user would, on a tiny gpt-oss (tests/make_family_gguf: sinks, biases, 8 experts with
# 2 chosen, a window of 8 on layer 0, YaRN; stories260K's vocabulary), greedy:
#   - the heads view names the window and gives each head's sink share ("s 12.3%"):
#     the weight its keys do not get;
#   - the attribution view's largest parts name chosen experts ("L1 E3 +0.12", from 1), not
#     whole layers (test_expert_routes checks the parts add up, biases included).
# Nothing asserts timing.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

MODEL=$T/gpt-oss.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" gpt-oss "$MODEL" "$DATA/stories260K.gguf" ||
    fail "make_family_gguf failed"

start -- --no-config -s 1 -t 0 -n 12 -i "Tell me a story." "$MODEL"
wait_for " idle |"
$TM resize-window -t t -x 120 -y 34
keys Tab Tab Tab # the Attention pane
for _ in 1 2 3 4 5 6 7 8; do
    case $(screen) in *"heads of layer 1/2"* | *"heads L1/2 "*) break ;; esac
    keys v
    sleep 0.3
done
screen | grep -Eq "heads (of layer |L)1/2 .*window 8" ||
    show_screen_and_fail "no heads view of layer 1 naming its window of 8"
screen | grep -Eq "H1 .*@[0-9]+ .*% s (<?[0-9.]+%|100%)" ||
    show_screen_and_fail "no sink share on head 1's row"
pass "the heads view names the window and each head's sink share"

for _ in 1 2 3 4 5 6 7 8; do
    case $(screen) in *"attribution to "*) break ;; esac
    keys v
    sleep 0.3
done
wait_for "attribution to "
wait_for "largest: "
line=$(screen | grep "largest: ")
printf '%s\n' "$line" | grep -Eq "L[12] E[0-9]+ [-+]" ||
    show_screen_and_fail "the largest parts name no expert"
if printf '%s\n' "$line" | grep -Eq "L[12] MLP"; then
    show_screen_and_fail "the largest parts name a whole layer of experts"
fi
pass "the attribution view's largest parts are chosen experts"
keys q
