# lib.sh — helpers shared by the end-to-end tests (tests/e2e_*.sh), sourced, POSIX sh.
#
# Owns: the test environment (LLMCHAT_BIN, the fixtures in tests/data, a scratch directory,
# a private HOME so that no config file or history of the user's is read), running
# the binary with its output captured, assertions that explain themselves when they fail,
# a JSON Lines reader (python3) for the golden files, and the servers the remote
# client's tests talk to (tests/fake_server, llama.cpp's llama-server and RPC server),
# stopped when the test exits.
# Does not: decide what is tested; skip anything except when a needed tool is absent.
#
# Environment (set by make check): LLMCHAT_BIN, LLMCHAT_SRCDIR, LLMCHAT_BUILDDIR; and, if
# the user has them elsewhere, LLAMA_SERVER and RPC_SERVER (llama.cpp's servers).
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

# jsonl_rows FILE: prints the directory that holds FILE's records unpacked, a file a
# key of each record (INDEX.KEY, the value as jsonl_get prints it) and `count`. One
# python3 writes it, the first time a test reads a file with this content (the
# directory is named by the content's CRC and size, so a file written again is read
# again); jsonl_get and jsonl_count read it with cat: a python3 start a value was a
# tenth of the suite's end-to-end time.
jsonl_rows() {
    jsonl_dir=$T/.jsonl/$(cksum <"$1" | tr ' ' '-') || hard_error "cannot read $1"
    if [ ! -f "$jsonl_dir/count" ]; then
        mkdir -p "$jsonl_dir" || hard_error "cannot make $jsonl_dir"
        "$PYTHON" - "$1" "$jsonl_dir" <<'EOF' || hard_error "$1 is not JSON Lines"
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1], encoding="utf-8") if l.strip()]
for i, r in enumerate(rows):
    for k, v in (r.items() if isinstance(r, dict) else ()):
        if "/" in k or not k:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, list):
            v = " ".join(str(x) for x in v)
        elif not isinstance(v, str):
            v = json.dumps(v)
        with open(os.path.join(sys.argv[2], "%d.%s" % (i, k)), "w", encoding="utf-8",
                  newline="") as f:
            f.write(v)
with open(os.path.join(sys.argv[2], "count"), "w") as f:
    f.write("%d\n" % len(rows))
EOF
    fi
    printf '%s\n' "$jsonl_dir"
}

# jsonl_count FILE: the number of records.
jsonl_count() {
    cat "$(jsonl_rows "$1")/count"
}

# jsonl_get FILE INDEX KEY: record INDEX's (0-based) KEY, printed without a newline:
# strings as they are, lists space-separated, true/false, numbers as JSON writes them.
# A record or key that is not there: a message and a non-zero status.
jsonl_get() {
    jsonl_dir=$(jsonl_rows "$1") || return 1
    [ -f "$jsonl_dir/$2.$3" ] || { echo "$1: no key \"$3\" in record $2" >&2; return 1; }
    cat "$jsonl_dir/$2.$3"
}

# golden_text FILE INDEX: record INDEX's "text" without its final newline, if any: the
# part of a reference generation that ours must start with.
golden_text() {
    golden_v=$(jsonl_get "$1" "$2" text && printf x) || return 1
    golden_v=${golden_v%x}
    case $golden_v in
    *"
") golden_v=${golden_v%?} ;;
    esac
    printf '%s' "$golden_v"
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

# ---- servers: the remote client's tests ----
#
# Every server started here is stopped (SIGTERM, then reaped) when the test exits: the
# EXIT trap is chained, its earlier command (removing $T) run after the servers are
# gone. FAKE_URL/FAKE_PID, SERVER_URL/SERVER_PID/SERVER_LOG and RPC_ADDR/RPC_PID name the
# latest of each kind; several may run at once, each with its own files in $T.

lib_server_pids=
lib_server_count=0

# lib_stop_servers: stops every server still registered (the EXIT trap runs it).
lib_stop_servers() {
    for lib_pid in $lib_server_pids; do
        kill "$lib_pid" 2>/dev/null
        wait "$lib_pid" 2>/dev/null
    done
    lib_server_pids=
    return 0
}

# lib_seen_trap CMD CONDITION...: how lib_register_server reads the output of `trap`.
lib_seen_trap() {
    case ${2:-} in
    EXIT | 0) lib_old_exit=$1 ;;
    esac
    return 0
}

# lib_register_server PID: PID is stopped at exit. The EXIT trap becomes
# "lib_stop_servers; <the command it had>", unless it already runs lib_stop_servers (a
# trap set after the first server is chained again at the next).
lib_register_server() {
    lib_server_pids="$lib_server_pids $1"
    lib_old_exit=
    trap >"$T/traps"
    eval "$(sed 's/^trap -- /lib_seen_trap /' "$T/traps")"
    case $lib_old_exit in
    *lib_stop_servers*) ;;
    *)
        # shellcheck disable=SC2064 # the earlier command, as it is now
        trap "lib_stop_servers; $lib_old_exit" EXIT
        ;;
    esac
}

# lib_unregister_server PID: PID was reaped already.
lib_unregister_server() {
    lib_left=
    for lib_pid in $lib_server_pids; do
        [ "$lib_pid" = "$1" ] || lib_left="$lib_left $lib_pid"
    done
    lib_server_pids=$lib_left
}

# lib_random_port: a port number in 20000-60000.
lib_random_port() {
    lib_r=$(od -An -N2 -tu2 /dev/urandom 2>/dev/null | tr -d ' ')
    [ -n "$lib_r" ] || lib_r=$(awk -v s="$$$lib_server_count" 'BEGIN { srand(s + 0); print int(rand() * 65536) }')
    echo $((20000 + lib_r % 40001))
}

# lib_port_state PORT: "free" if nothing accepts connections on 127.0.0.1:PORT, "used"
# if something does, "unknown" if curl cannot tell (built without telnet://).
lib_port_state() {
    lib_rc=0
    curl -s --max-time 0.5 "telnet://127.0.0.1:$1" </dev/null >/dev/null 2>&1 || lib_rc=$?
    case $lib_rc in
    7) echo free ;;
    0 | 28 | 52 | 56) echo used ;;
    *) echo unknown ;;
    esac
}

# lib_free_port: a random port in 20000-60000 that nothing listens on (as far as one
# connection attempt tells: the callers retry when the server cannot bind it).
lib_free_port() {
    for lib_n in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
        lib_p=$(lib_random_port)
        [ "$(lib_port_state "$lib_p")" = used ] || {
            echo "$lib_p"
            return 0
        }
    done
    return 1
}

# start_fake_server ARGS...: starts tests/fake_server (the build tree's) with ARGS
# (--routes DIR, --status CODE --body FILE, --cut-after N, --stall, --garbage,
# --chunk-delay-ms MS, --log FILE, --max-requests N: its header says what each does) on a
# port the kernel picks; waits (10 s at most) until it listens. Sets FAKE_URL
# (http://127.0.0.1:PORT), FAKE_PID, and FAKE_ERR (its stderr).
start_fake_server() {
    lib_fake_bin=${LLMCHAT_BUILDDIR:-.}/tests/fake_server
    [ -x "$lib_fake_bin" ] || hard_error "$lib_fake_bin is not built (make check builds it)"
    lib_server_count=$((lib_server_count + 1))
    lib_port_file=$T/fake_server.$lib_server_count.port
    FAKE_ERR=$T/fake_server.$lib_server_count.err
    "$lib_fake_bin" --port-file "$lib_port_file" "$@" 2>"$FAKE_ERR" </dev/null &
    FAKE_PID=$!
    lib_register_server "$FAKE_PID"
    lib_n=0
    while [ ! -s "$lib_port_file" ]; do
        if ! kill -0 "$FAKE_PID" 2>/dev/null; then
            lib_rc=0
            wait "$FAKE_PID" || lib_rc=$?
            lib_unregister_server "$FAKE_PID"
            fail "fake_server $* exited (status $lib_rc) before it listened: $(cat "$FAKE_ERR")"
        fi
        lib_n=$((lib_n + 1))
        [ "$lib_n" -le 200 ] || fail "fake_server $* did not listen within 10 s"
        sleep 0.05
    done
    FAKE_URL=http://127.0.0.1:$(cat "$lib_port_file")
}

# stop_fake_server: stops the latest fake_server and reaps it: nothing listens at
# FAKE_URL afterwards (until the kernel gives the port to someone else).
stop_fake_server() {
    kill "$FAKE_PID" 2>/dev/null
    wait "$FAKE_PID" 2>/dev/null
    lib_unregister_server "$FAKE_PID"
    return 0
}

# need_llama_server: sets LLAMA_SERVER to llama.cpp's llama-server: $LLAMA_SERVER if it
# is an executable, else llama-server on PATH; skips the test when there is none (the
# tests read nothing outside the repository that the environment does not name).
need_llama_server() {
    if [ -n "${LLAMA_SERVER:-}" ] && [ -x "$LLAMA_SERVER" ] && [ ! -d "$LLAMA_SERVER" ]; then
        :
    elif command -v llama-server >/dev/null 2>&1; then
        LLAMA_SERVER=$(command -v llama-server)
    else
        skip "llama-server (llama.cpp 0.4.0) is not here: build it with scripts/build-llama-cpp DIR llama-server and set LLAMA_SERVER"
    fi
}

# need_rpc_server: sets RPC_SERVER to llama.cpp's RPC server: $RPC_SERVER if it is an
# executable, else rpc-server or ggml-rpc-server on PATH; skips the test when there is
# none.
need_rpc_server() {
    if [ -n "${RPC_SERVER:-}" ] && [ -x "$RPC_SERVER" ] && [ ! -d "$RPC_SERVER" ]; then
        :
    elif command -v rpc-server >/dev/null 2>&1; then
        RPC_SERVER=$(command -v rpc-server)
    elif command -v ggml-rpc-server >/dev/null 2>&1; then
        RPC_SERVER=$(command -v ggml-rpc-server)
    else
        skip "ggml-rpc-server (llama.cpp 0.4.0) is not here: build it with scripts/build-llama-cpp DIR ggml-rpc-server and set RPC_SERVER"
    fi
}

# start_llama_server MODEL ARGS...: starts $LLAMA_SERVER (need_llama_server first, if
# it was not called) on MODEL: 127.0.0.1, a free port, 2 threads, a 512-token context,
# no web UI, then ARGS (which may override those). Waits (60 s at most) until GET /health
# answers {"status":"ok"}; a port it cannot bind is replaced by another (5 tries). Sets
# SERVER_URL (http://127.0.0.1:PORT), SERVER_PID and SERVER_LOG (its output). Fails the
# test with the end of its log if it does not come up. Skips without curl.
start_llama_server() {
    need_tool curl
    [ -n "${LLAMA_SERVER:-}" ] || need_llama_server
    [ $# -ge 1 ] || hard_error "start_llama_server: no model"
    lib_model=$1
    shift
    if [ -z "${lib_llama_webui+set}" ]; then
        lib_llama_webui=
        if "$LLAMA_SERVER" --help 2>&1 | grep -q -e '--no-webui'; then
            lib_llama_webui=--no-webui
        fi
    fi
    lib_try=0
    while :; do
        lib_try=$((lib_try + 1))
        lib_port=$(lib_free_port) || fail "no free port for llama-server in 20000-60000"
        lib_server_count=$((lib_server_count + 1))
        SERVER_LOG=$T/llama-server.$lib_server_count.log
        SERVER_URL=http://127.0.0.1:$lib_port
        # shellcheck disable=SC2086 # lib_llama_webui: one word or none
        "$LLAMA_SERVER" -m "$lib_model" --host 127.0.0.1 --port "$lib_port" -t 2 -c 512 \
            $lib_llama_webui "$@" >"$SERVER_LOG" 2>&1 </dev/null &
        SERVER_PID=$!
        lib_register_server "$SERVER_PID"
        lib_deadline=$(($(date +%s) + 60))
        while :; do
            if ! kill -0 "$SERVER_PID" 2>/dev/null; then
                lib_rc=0
                wait "$SERVER_PID" || lib_rc=$?
                lib_unregister_server "$SERVER_PID"
                if [ "$lib_try" -lt 5 ] && grep -q "couldn't bind" "$SERVER_LOG"; then
                    continue 2
                fi
                fail "llama-server exited (status $lib_rc) before /health answered; the end of its log ($SERVER_LOG):
$(tail -n 20 "$SERVER_LOG")"
            fi
            if [ "$(curl -s --max-time 2 "$SERVER_URL/health" 2>/dev/null)" = '{"status":"ok"}' ] &&
                kill -0 "$SERVER_PID" 2>/dev/null; then
                return 0
            fi
            [ "$(date +%s)" -lt "$lib_deadline" ] ||
                fail "llama-server did not answer $SERVER_URL/health within 60 s; the end of its log ($SERVER_LOG):
$(tail -n 20 "$SERVER_LOG")"
            sleep 0.1
        done
    done
}

# start_rpc_server: starts $RPC_SERVER (need_rpc_server first, if it was not called) on
# 127.0.0.1, a free port, one thread; waits (30 s at most) until the port accepts
# connections; a port it cannot bind is replaced by another (5 tries). Sets RPC_ADDR
# (127.0.0.1:PORT), RPC_PID and RPC_LOG. Skips without curl (the port is probed with
# curl's telnet://).
start_rpc_server() {
    need_tool curl
    [ -n "${RPC_SERVER:-}" ] || need_rpc_server
    lib_try=0
    while :; do
        lib_try=$((lib_try + 1))
        lib_port=$(lib_free_port) || fail "no free port for the RPC server in 20000-60000"
        lib_server_count=$((lib_server_count + 1))
        RPC_LOG=$T/rpc-server.$lib_server_count.log
        RPC_ADDR=127.0.0.1:$lib_port
        "$RPC_SERVER" -H 127.0.0.1 -p "$lib_port" -t 1 >"$RPC_LOG" 2>&1 </dev/null &
        RPC_PID=$!
        lib_register_server "$RPC_PID"
        lib_deadline=$(($(date +%s) + 30))
        while :; do
            if ! kill -0 "$RPC_PID" 2>/dev/null; then
                # it cannot bind the port: "Failed to create server socket", exit status 0
                lib_rc=0
                wait "$RPC_PID" || lib_rc=$?
                lib_unregister_server "$RPC_PID"
                [ "$lib_try" -ge 5 ] ||
                    continue 2
                fail "the RPC server exited (status $lib_rc) before it listened; the end of its log ($RPC_LOG):
$(tail -n 20 "$RPC_LOG")"
            fi
            # the probe is one connection the server accepts and sees closed
            if [ "$(lib_port_state "$lib_port")" != free ] && kill -0 "$RPC_PID" 2>/dev/null; then
                return 0
            fi
            [ "$(date +%s)" -lt "$lib_deadline" ] ||
                fail "the RPC server did not listen on $RPC_ADDR within 30 s; the end of its log ($RPC_LOG):
$(tail -n 20 "$RPC_LOG")"
            sleep 0.1
        done
    done
}
