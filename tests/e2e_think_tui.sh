#!/bin/sh
# e2e_think_tui.sh — a reply's thinking in the TUI (in tmux): a tiny Qwen3-shaped model
# with Qwen3's vocabulary and template (tests/make_family_gguf) loads a saved chat
# whose reply opens with <think> ... </think> (the text is tokenized again, so <think>
# is Qwen3's token); Conversation folds the thinking into one line and shows the
# answer, z unfolds it (dimmed: --theme mono draws dim as dim), the selection's reverse
# video lands on the thinking token selected in Tokens, and on the fold line when
# folded again; C shades the unfolded thinking like the rest of the reply. Then
# gpt-oss's harmony: a saved reply's analysis channel folds the same way, up to the final
# channel's header. A random model does not think by itself, hence the saved chats.
# shellcheck source=lib.sh
. "$LLMCHAT_SRCDIR/tests/lib.sh"
# shellcheck source=tui_lib.sh
. "$LLMCHAT_SRCDIR/tests/tui_lib.sh"

VOCAB=${LLMCHAT_BUILDDIR:-.}/tests/qwen3-vocab.gguf
[ -f "$VOCAB" ] || hard_error "tests/qwen3-vocab.gguf is missing (make check decompresses tests/data/*.gguf.gz)"
MODEL=$T/qwen3-tiny.gguf
"${LLMCHAT_BUILDDIR:-.}/tests/make_family_gguf" qwen3 "$MODEL" "$VOCAB" || fail "make_family_gguf failed"
cat >"$T/think.json" <<'JSON'
{"llmchat_chat": 1, "template": "qwen3",
 "turns": [{"user": "Hello there",
            "reply": "<think>\nThe user says hello. I greet back.\n</think>\n\nHi! Nice to meet you.",
            "complete": true, "cut": false}]}
JSON

ESC=$(printf '\033')
# dim LINE-TEXT: the screen line holding LINE-TEXT has a dim attribute (SGR 2) on it.
dim() {
    screen_colors | grep -F "$1" | grep -Eq "$ESC\\[([0-9]+;)*2(;[0-9]+)*m"
}

start -- --no-config -s 1 -t 0 -n 4 --theme mono "$MODEL"
wait_for " idle |"
type_text "/load $T/think.json"
keys Enter
wait_for "[loaded "
wait_for "Hi! Nice to meet you."
screen | grep -Eq 'Assistant: ▸ thought for [0-9]+ tokens \(z: unfold\)' ||
    show_screen_and_fail "the thinking is not folded into one line"
screen | grep -q "I greet back" && show_screen_and_fail "the folded thinking is on the screen"
screen | grep -q "<think>" && show_screen_and_fail "<think> is on the screen while folded"
dim "thought for" || show_screen_and_fail "the fold line is not dim"
pass "the thinking is folded into one dim line, the answer below it"

keys Tab z # Conversation has the focus
wait_for "The user says hello. I greet back."
wait_for "thinking shown, dimmed (z folds it)"
screen | grep -q "Assistant: <think>" || show_screen_and_fail "unfolded, the reply does not start with <think>"
dim "The user says hello" || show_screen_and_fail "the unfolded thinking is not dim"
dim "Hi! Nice to meet you." && show_screen_and_fail "the answer is dim"
pass "z unfolds it: the thinking dimmed, the answer not"

# the selection: walk Tokens back to the thinking's " back"
keys Tab
tries=0
until screen | grep -q "␣back  prompt"; do
    tries=$((tries + 1))
    [ $tries -le 40 ] || show_screen_and_fail "Left never selected the token ' back'"
    keys Left
    sleep 0.1
done
wait_for "I greet back." # redrawn
keys BTab # back to Conversation, whose key z is
screen_colors | grep -F "The user says" | grep -Eq "$ESC\\[([0-9]+;)*7(;[0-9]+)*m($ESC\\[[0-9;]*m)* back" ||
    show_screen_and_fail "the selected thinking token is not in reverse video"
keys z
wait_for "thinking folded (z unfolds it)"
screen_colors | grep -F "thought for" | grep -Eq "$ESC\\[([0-9]+;)*7(;[0-9]+)*m($ESC\\[[0-9;]*m)*▸ thought" ||
    show_screen_and_fail "the fold line is not in reverse video while a folded token is selected"
pass "the selected token is highlighted in the unfolded thinking, and the fold line while folded"

keys z C
wait_for "reply tokens coloured by the probability"
screen_colors | grep -F "The user says" | grep -Eq "$ESC\\[([0-9]+;)*4(;[0-9]+)*m" ||
    show_screen_and_fail "C does not shade the unfolded thinking (mono: underlined levels)"
pass "C shades the unfolded thinking's tokens"

keys q
wait_exit

# gpt-oss's harmony: the analysis channel, up to the final channel's header, folds the
# same way (the fold is found in the reply's text; this model's vocabulary spells the
# markers as text pieces).
cat >"$T/harmony.json" <<'JSON'
{"llmchat_chat": 1, "template": "harmony",
 "turns": [{"user": "Hello there",
            "reply": "<|channel|>analysis<|message|>Greetings.<|end|><|start|>assistant<|channel|>final<|message|>Hello, friend. It is a fine day for a long walk in the park, is it not?",
            "complete": true, "cut": false}]}
JSON
start -- --no-config -s 1 -t 0 -n 4 --theme mono --template harmony "$LLMCHAT_SRCDIR/tests/data/stories260K.gguf"
wait_for " idle |"
type_text "/load $T/harmony.json"
keys Enter
wait_for "[loaded "
wait_for "Hello, friend."
screen | grep -Eq 'Assistant: ▸ thought for [0-9]+ tokens \(z: unfold\)' ||
    show_screen_and_fail "harmony's analysis is not folded into one line"
screen | grep -q "Greetings\|<|channel|>\|<|start|>" &&
    show_screen_and_fail "the folded analysis or a channel header is on the screen"
keys Tab z
wait_for "Greetings."
dim "Greetings" || show_screen_and_fail "the unfolded analysis is not dim"
dim "is it not?" && show_screen_and_fail "the final answer is dim"
pass "harmony's analysis channel is folded, z unfolds it dimmed, the final answer not"
keys q
wait_exit
