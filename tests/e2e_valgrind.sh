#!/bin/sh
# e2e_valgrind.sh — valgrind's memcheck finds no invalid access, no use of
# uninitialised memory and no leak in a generate run, in a scripted chat (several
# turns, an overflowing context, slash commands, /save and /load) and in a chat that
# --resume reopens (its model and file paths taken from the saved chat); and nothing the
# kernels allocated is left at exit, not even reachable (their scratch is the
# transformer's, freed with it). Valgrind does not know AVX-512, so the runs use the AVX2
# kernels and the scalar ones. Memcheck runs code some 50 times slower: the runs are
# short and get 10 minutes each.
# Skipped when valgrind is not installed, and in a sanitizer build (valgrind cannot
# run an ASan binary; there ASan and LeakSanitizer do this job over the whole suite).
LLMCHAT_TEST_TIMEOUT=${LLMCHAT_TEST_TIMEOUT:-600}
. "$LLMCHAT_SRCDIR/tests/lib.sh"

need_tool valgrind
[ "${LLMCHAT_SANITIZERS:-no}" != yes ] || skip "a sanitizer build: ASan runs instead of valgrind"

# vg NAME ARGS...: llmchat under memcheck; its report goes to $T/vg-NAME.
vg() {
    vg_name=$1
    shift
    # GOMP_SPINCOUNT set: llmchat does not start itself again with it (openmp_wait.h),
    # which valgrind would not follow
    run_program "valgrind llmchat" env GOMP_SPINCOUNT=10000 valgrind --quiet --error-exitcode=99 \
        --leak-check=full \
        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
        --track-origins=yes --log-file="$T/vg-$vg_name" "$LLMCHAT_BIN" "$@"
    if [ "$rc" -eq 99 ]; then
        cat "$T/vg-$vg_name" >&2
        fail "valgrind found errors in the $vg_name run"
    fi
}

export OMP_NUM_THREADS=2

vg generate -m generate -n 24 -t 0 --kernels scalar -i "Once upon a time" \
    -z "$DATA/tok512.bin" "$DATA/stories260K.bin" </dev/null
assert_status 0
assert_contains "generate output" "$(cat "$T/out")" "Once upon a time"
pass "generate: no memory errors, no leaks"

{
    printf '%s\n' "Tell me a story about a dog named Max."
    printf '%s\n' "/system You tell very short stories."
    printf '%s\n' "Tell me a story about Tom."
    printf '%s\n' "Tell me a story about Anna."
    printf '/save %s\n' "$T/saved.json"
    printf '%s\n' "/reset"
    printf '/load %s\n' "$T/saved.json"
    printf '%s\n' "And one more about Sue."
    printf '%s\n' "/nonsense"
    printf '%s\n' "/quit"
} >"$T/in"
# the AVX2 kernels where this build and CPU have them (not in a --disable-simd build)
chat_kernels=avx2
"$LLMCHAT_BIN" -m generate -n 1 --kernels avx2 -z "$DATA/tok512.bin" "$DATA/stories260K.bin" \
    </dev/null >/dev/null 2>&1 || chat_kernels=scalar
vg chat -m chat -c 96 -n 30 -s 7 --kernels "$chat_kernels" -z "$DATA/tok512.bin" \
    "$BUNDLED/chat260K.bin" <"$T/in"
assert_status 0
[ "$(grep -c . "$T/out")" -ge 4 ] || fail "the scripted chat gave fewer than 4 replies"
grep -q 'dropped the oldest' "$T/err" || fail "the scripted chat never overflowed its context"
pass "a scripted chat (overflowing context, commands, save and load): no memory errors, no leaks"

printf 'Tell me a story about Tom.\n' >"$T/in1"
run_llmchat -m chat --autosave always -n 8 -t 0 "$BUNDLED/chat260K.bin" <"$T/in1"
assert_status 0
printf 'And one about Max.\n' >"$T/in2"
vg resume -m chat --resume -n 8 --kernels "$chat_kernels" <"$T/in2"
assert_status 0
assert_file_contains "the resumed chat" "$T/err" "(1 turn)"
pass "a chat reopened with --resume: no memory errors, no leaks"

# The kernels' scratch belongs to the transformer and is freed with it: at exit no block
# the kernels allocated is left, not even a reachable one (a prompt of 16 tokens or more
# runs on the batch kernels, whose GEMM packs its vectors in the scratch).
run_program "valgrind llmchat" env GOMP_SPINCOUNT=10000 valgrind --quiet --leak-check=full \
    --show-leak-kinds=all --log-file="$T/vg-scratch" "$LLMCHAT_BIN" -m generate -n 4 -t 0 \
    --kernels "$chat_kernels" -z "$DATA/tok512.bin" \
    -i "Once upon a time there was a little girl named Lily who loved to play in the park" \
    "$DATA/stories260K.bin" </dev/null
assert_status 0
if grep -Eq '\((kernels|scratch|scalar|x86-[a-z0-9-]+|arm-[a-z0-9-]+)\.c:[0-9]+\)' "$T/vg-scratch"; then
    cat "$T/vg-scratch" >&2
    fail "memory the kernels allocated is left at exit (above)"
fi
pass "a prompt on the batch kernels: nothing the kernels allocated is left at exit"
