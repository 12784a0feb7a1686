#!/bin/sh
# e2e_threads.sh — the thread count: by default the CPUs this process may run on (one
# under `taskset -c N`), said by --verbose; -T above that allowed, said to oversubscribe;
# and the text the same on any number of threads (a model whose one-token path runs
# on several threads); the OpenMP runtime spins briefly, then sleeps (GOMP_SPINCOUNT
# 10000, what OMP_DISPLAY_ENV shows) unless the user chose. Asserts no speed.
. "$LLMCHAT_SRCDIR/tests/lib.sh"

MODEL=$DATA/babyllama_tok105_model5000.bin
TOK=$DATA/babyllama_tok105.bin
gen() {
    run_program "$@" -m generate -t 0 -n 24 -i "Once upon" -z "$TOK" "$MODEL" </dev/null
}

# ---- the default: every CPU of the affinity mask ----
cpus=$("$PYTHON" -c 'import os; print(len(os.sched_getaffinity(0)))')
gen llmchat "$LLMCHAT_BIN" --verbose
assert_status 0
if [ "$cpus" -eq 1 ]; then word="thread"; cpu_word="CPU"; else word="threads"; cpu_word="CPUs"; fi
assert_file_contains "--verbose" "$T/err" "llmchat: $cpus $word ($cpus $cpu_word this process may run on)"
assert_not_contains "stderr" "$(cat "$T/err")" "oversubscribes"
cp "$T/out" "$T/text_default"
pass "default: $cpus threads, the CPUs of the affinity mask, said by --verbose"

gen llmchat "$LLMCHAT_BIN" -T 1
assert_status 0
cmp -s "$T/out" "$T/text_default" || fail "the text on one thread differs from the text on $cpus"
pass "the same text on one thread"

# ---- under taskset: one CPU, one thread; -T 3 allowed, said to oversubscribe ----
if command -v taskset >/dev/null 2>&1; then
    cpu=$("$PYTHON" -c 'import os; print(min(os.sched_getaffinity(0)))')
    gen taskset taskset -c "$cpu" "$LLMCHAT_BIN" --verbose
    assert_status 0
    assert_file_contains "--verbose under taskset" "$T/err" "llmchat: 1 thread (1 CPU this process may run on)"
    cmp -s "$T/out" "$T/text_default" || fail "the text under taskset differs"
    pass "taskset -c $cpu: one thread by default"

    gen taskset taskset -c "$cpu" "$LLMCHAT_BIN" -T 3
    assert_status 0
    assert_file_contains "notice" "$T/err" \
        "llmchat: -T 3 oversubscribes: more threads than the 1 CPU this process may run on"
    cmp -s "$T/out" "$T/text_default" || fail "the text on 3 threads sharing one CPU differs"
    pass "taskset -c $cpu -T 3: runs, says it oversubscribes, the same text"
else
    echo "note: no taskset: the affinity cases are not checked"
fi

# ---- the config file's threads is the default too, and checked like -T ----
mkdir -p "$HOME/.config/llmchat"
echo "threads = 1" >"$HOME/.config/llmchat/config"
gen llmchat "$LLMCHAT_BIN" --verbose
assert_status 0
assert_file_contains "--verbose with threads = 1" "$T/err" "llmchat: 1 thread ("
rm -f "$HOME/.config/llmchat/config"
run_llmchat -T 0 -m generate -i x "$MODEL" </dev/null
[ "$rc" -eq 2 ] || fail "-T 0 exited $rc"
assert_file_contains "message" "$T/err" "threads"
pass "config threads = 1; -T 0 refused"

# ---- the OpenMP wait policy: a short spin unless the user chose (openmp_wait.h) ----
# (make check gives every other run the spin count, Makefile.am's
# AM_TESTS_ENVIRONMENT: here llmchat must set it itself)
unset GOMP_SPINCOUNT OMP_WAIT_POLICY
if "$LLMCHAT_BIN" --version >/dev/null 2>&1 && OMP_DISPLAY_ENV=true "$LLMCHAT_BIN" --version 2>&1 |
    grep -q "OPENMP DISPLAY ENVIRONMENT"; then
    OMP_DISPLAY_ENV=verbose "$LLMCHAT_BIN" --version >"$T/out" 2>"$T/err"
    grep -q "GOMP_SPINCOUNT = '10000'" "$T/err" ||
        fail "the runtime does not spin 10000: $(grep -i 'spincount\|wait_policy' "$T/err")"
    OMP_DISPLAY_ENV=verbose GOMP_SPINCOUNT=777 "$LLMCHAT_BIN" --version >"$T/out" 2>"$T/err"
    grep -q "GOMP_SPINCOUNT = '777'" "$T/err" || fail "the user's GOMP_SPINCOUNT was not kept"
    OMP_DISPLAY_ENV=verbose OMP_WAIT_POLICY=active "$LLMCHAT_BIN" --version >"$T/out" 2>"$T/err"
    if grep -q "GOMP_SPINCOUNT = '10000'" "$T/err"; then
        fail "OMP_WAIT_POLICY=active was overridden"
    fi
    pass "the OpenMP threads spin 10000 then sleep, unless OMP_WAIT_POLICY or GOMP_SPINCOUNT says otherwise"
fi
