# lib.sh — helpers shared by the end-to-end tests (tests/e2e_*.sh), sourced, POSIX sh.
#
# Owns: the test environment (LLMCHAT_BIN, the fixtures in tests/data, a scratch directory,
# a private HOME so that no config file or history of the user's is read), running
# the binary with its output captured, assertions that explain themselves when they fail,
# and a JSON Lines reader (python3) for the golden files.
# Does not: decide what is tested; skip anything except when a needed tool is absent.
#
# Environment (set by make check): LLMCHAT_BIN, LLMCHAT_SRCDIR.
# Exit codes follow automake's test driver: 0 pass, 1 fail, 77 skip, 99 hard error.

set -u

test_name=$(basename "$0" .sh)

# ---- reporting ----

# fail MESSAGE: the test fails; shows the last llmchat command and what it printed.
fail() {
    {
        printf 'FAIL: %s: %s\n' "$test_name" "$*"
        if [ -n "${last_cmd:-}" ]; then
            printf '  last command: %s\n' "$last_cmd"
            printf '  exit status: %s\n' "${rc:-?}"
            if [ -s "$T/out" ]; then
                printf '  stdout (first 20 lines):\n'
                head -n 20 "$T/out" | sed 's/^/    | /'
            fi
            if [ -s "$T/err" ]; then
                printf '  stderr (last 20 lines):\n'
                tail -n 20 "$T/err" | sed 's/^/    | /'
            fi
        fi
    } >&2
    exit 1
}

# skip REASON: only for a prerequisite tool that is truly absent, never to hide a failure.
skip() {
    printf 'SKIP: %s: %s\n' "$test_name" "$*" >&2
    exit 77
}

# hard_error MESSAGE: the test cannot run at all (broken environment).
hard_error() {
    printf 'ERROR: %s: %s\n' "$test_name" "$*" >&2
    exit 99
}

pass() {
    printf 'PASS: %s: %s\n' "$test_name" "$*"
}

need_tool() {
    command -v "$1" >/dev/null 2>&1 || skip "$1 is not installed"
}

# need_numpy: sets NUMPY_PYTHON to a python3 that imports numpy (the reference scripts of
# tests/ref need it): the one on PATH, else Debian's /usr/bin/python3; skips saying so
# when neither has it.
need_numpy() {
    for py in "$PYTHON" /usr/bin/python3; do
        if "$py" -c 'import numpy' >/dev/null 2>&1; then
            NUMPY_PYTHON=$py
            PYTHONDONTWRITEBYTECODE=1
            export PYTHONDONTWRITEBYTECODE
            return 0
        fi
    done
    skip "numpy is not installed for python3 ($PYTHON, /usr/bin/python3): apt-get install python3-numpy"
}

# ---- environment ----

[ -n "${LLMCHAT_BIN:-}" ] || hard_error "LLMCHAT_BIN is not set (run through make check)"
[ -x "$LLMCHAT_BIN" ] || hard_error "LLMCHAT_BIN=$LLMCHAT_BIN is not an executable (was it built?)"
[ -n "${LLMCHAT_SRCDIR:-}" ] || hard_error "LLMCHAT_SRCDIR is not set (run through make check)"

# The repository's own fixtures (tests/data/README says where each comes from) and the
# bundled chat model that llmchat ships.
DATA=$LLMCHAT_SRCDIR/tests/data
GOLDEN=$DATA/golden
BUNDLED=$LLMCHAT_SRCDIR/data/models
[ -d "$DATA" ] && [ -d "$GOLDEN" ] || hard_error "$DATA has no fixtures (an incomplete checkout?)"

# model_file NAME: the path of a model or tokenizer named in a golden file: tests/data
# first, then the bundled models.
model_file() {
    if [ -e "$DATA/$1" ]; then
        printf '%s\n' "$DATA/$1"
    else
        printf '%s\n' "$BUNDLED/$1"
    fi
}

need_tool python3
# The real interpreter, not a version-manager shim that costs 0.1 s a call.
PYTHON=$(python3 -c 'import sys; print(sys.executable or "python3")') || hard_error "python3 does not run"

T=$(mktemp -d "${TMPDIR:-/tmp}/llmchat-$test_name.XXXXXX") || hard_error "mktemp failed"
trap 'rm -rf "$T"' EXIT
trap 'exit 130' INT TERM
: >"$T/out"
: >"$T/err"

# Nothing of the user's is read or written: a private home with its own XDG
# directories (no config file, no history, no fetched models), no LLMCHAT_MODEL or
# NO_COLOR, and the repository's data directory (the bundled model, models.tsv).
HOME=$T/home
XDG_CONFIG_HOME=$HOME/.config
XDG_STATE_HOME=$HOME/.local/state
XDG_DATA_HOME=$HOME/.local/share
XDG_CACHE_HOME=$HOME/.cache
LLMCHAT_DATADIR=$LLMCHAT_SRCDIR/data
export HOME XDG_CONFIG_HOME XDG_STATE_HOME XDG_DATA_HOME XDG_CACHE_HOME LLMCHAT_DATADIR
unset LLMCHAT_MODEL LLMCHAT_MODEL_MIRROR NO_COLOR
mkdir -p "$HOME" || hard_error "cannot create $HOME"

# Every llmchat run is bounded in time, so a hang fails the test instead of the suite.
LLMCHAT_TEST_TIMEOUT=${LLMCHAT_TEST_TIMEOUT:-120}
if command -v timeout >/dev/null 2>&1; then
    run_timeout="timeout $LLMCHAT_TEST_TIMEOUT"
else
    run_timeout=
fi

# run_llmchat ARGS...: runs the binary (stdin as given by the caller) with stdout in
# $T/out, stderr in $T/err and the exit status in $rc. Fails the test at once if the
# program hangs, dies of a signal or trips a sanitizer: none of those is ever an answer.
run_llmchat() {
    run_program llmchat "$LLMCHAT_BIN" "$@"
}

# run_program NAME PATH ARGS...: run_llmchat for another of the built programs.
run_program() {
    run_name=$1 run_path=$2
    shift 2
    last_cmd="$run_name $*"
    rc=0
    $run_timeout "$run_path" "$@" >"$T/out" 2>"$T/err" || rc=$?
    if [ -n "$run_timeout" ] && [ "$rc" -eq 124 ]; then
        fail "timed out after ${LLMCHAT_TEST_TIMEOUT}s"
    fi
    if [ "$rc" -gt 128 ]; then
        fail "killed by signal $((rc - 128))"
    fi
    if grep -q 'Sanitizer\|runtime error:' "$T/err"; then
        fail "a sanitizer reported an error"
    fi
}

# ---- assertions ----

# assert_status EXPECTED: the last run_llmchat exited with EXPECTED.
assert_status() {
    [ "$rc" -eq "$1" ] || fail "expected exit status $1, got $rc"
}

# assert_eq WHAT EXPECTED ACTUAL
assert_eq() {
    [ "$2" = "$3" ] || fail "$1: expected [$2], got [$3]"
}

# assert_contains WHAT HAYSTACK NEEDLE
assert_contains() {
    case $2 in
    *"$3"*) ;;
    *) fail "$1: [$3] not found in [$2]" ;;
    esac
}

# assert_not_contains WHAT HAYSTACK NEEDLE
assert_not_contains() {
    case $2 in
    *"$3"*) fail "$1: [$3] should not appear in [$2]" ;;
    esac
}

# assert_file_contains WHAT FILE NEEDLE: FILE contains the fixed string NEEDLE.
assert_file_contains() {
    grep -qF -- "$3" "$2" || fail "$1: [$3] not found in $2"
}

# history_text FILE: a readline history file's lines as typed. GNU readline's file is
# that already; libedit's starts with a line of its own (_HiStOrY_V2_) and writes a
# space as \040 (vis(3)): both undone.
history_text() {
    sed -e '1{/^_HiStOrY_V2_$/d;}' -e 's/\\040/ /g' "$1"
}

# assert_error_message: the last run printed a message of ours ("llmchat: ...") on stderr.
assert_error_message() {
    grep -q '^llmchat: ' "$T/err" || fail "no 'llmchat: ' message on stderr"
}

# assert_prefix WHAT PREFIX_FILE FILE: FILE starts with the whole of PREFIX_FILE.
assert_prefix() {
    "$PYTHON" - "$2" "$3" <<'EOF' || fail "$1"
import sys
want = open(sys.argv[1], encoding="utf-8", errors="replace").read()
got = open(sys.argv[2], encoding="utf-8", errors="replace").read()
if not got.startswith(want):
    i = 0
    while i < min(len(want), len(got)) and want[i] == got[i]:
        i += 1
    print("  outputs differ at character %d of %d:" % (i, len(want)), file=sys.stderr)
    print("  expected ...%r" % want[max(0, i - 40):i + 40], file=sys.stderr)
    print("  got      ...%r" % got[max(0, i - 40):i + 40], file=sys.stderr)
    sys.exit(1)
EOF
}

# ---- JSON Lines ----

# jsonl_count FILE: the number of records.
jsonl_count() {
    "$PYTHON" -c 'import sys; print(sum(1 for l in open(sys.argv[1]) if l.strip()))' "$1"
}

# jsonl_get FILE INDEX KEY: record INDEX's (0-based) KEY, printed without a newline:
# strings as they are, lists space-separated, true/false, numbers as JSON writes them.
jsonl_get() {
    "$PYTHON" - "$1" "$2" "$3" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
v = rows[int(sys.argv[2])][sys.argv[3]]
if isinstance(v, bool):
    v = "true" if v else "false"
elif isinstance(v, list):
    v = " ".join(str(x) for x in v)
elif not isinstance(v, str):
    v = json.dumps(v)
sys.stdout.write(v)
EOF
}

# golden_text FILE INDEX: record INDEX's "text" without its final newline, if any: the
# part of a reference generation that ours must start with.
golden_text() {
    jsonl_get "$1" "$2" text | "$PYTHON" -c \
        'import sys; t = sys.stdin.read(); sys.stdout.write(t[:-1] if t.endswith("\n") else t)'
}

# trim: strips leading and trailing whitespace from stdin.
trim() {
    "$PYTHON" -c 'import sys; sys.stdout.write(sys.stdin.read().strip())'
}

# kernel_tables: the kernel tables llmchat knows, auto left out, space-separated: its
# --help line for --kernels, which kernels.h's one list of names makes.
kernel_tables() {
    "$LLMCHAT_BIN" --help 2>/dev/null | tr -s ' \n' '  ' |
        sed -n 's/.*--kernels ISA auto | \([^(]*\) (default auto).*/\1/p' | sed 's/ | / /g'
}
