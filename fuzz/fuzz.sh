#!/bin/sh
# fuzz.sh — builds the libFuzzer targets with clang (ASan + UBSan) and runs each for a
# while: what `make fuzz` runs.
#
# Owns: fuzz-out/ in the build directory (objects, the targets, each target's working
# corpus, crash files and logs). The corpus starts from fuzz/corpus/TARGET in the
# source tree (crafted seeds and earlier crashes) plus, for the file loaders, the real
# files in tests/data and data/models. Does not: change the source tree; a crash is
# left in fuzz-out/crashes/TARGET/ for a person to fix and copy into fuzz/corpus.
#
# Usage: fuzz.sh SRCDIR SECONDS "TARGETS" CORE_SOURCES...
#   FUZZ_CC (default clang), FUZZ_BUILD_JOBS (compilers run at once, default the
#   CPUs online), FUZZ_NICE (default 10); FUZZ_EXTRA_CFLAGS and FUZZ_EXTRA_LIBS: what
#   the build found for libcurl and dlopen (make fuzz passes them), added to the compile and the
#   link. The targets run one after another, each on one worker.
set -eu

srcdir=$1
seconds=$2
targets=$3
shift 3
cc=${FUZZ_CC:-clang}
nice_level=${FUZZ_NICE:-10}
out=fuzz-out

command -v "$cc" >/dev/null 2>&1 || {
    echo "fuzz: $cc not found: install clang (apt-get install clang)" >&2
    exit 1
}

flags="-g -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all"
# -I. finds the build's config.h (which kernel tables this build has)
flags="$flags ${FUZZ_EXTRA_CFLAGS:-} -I. -I$srcdir/src/base -I$srcdir/src/kernels -I$srcdir/src/formats -I$srcdir/src/core -I$srcdir/fuzz -DFUZZ_SRCDIR=\"$(cd "$srcdir" && pwd)\""
mkdir -p "$out/obj"

# ---- the core, once, instrumented for coverage ----
# The objects out of date, compiled FUZZ_BUILD_JOBS at a time (xargs -P; a list of
# "source object level" lines); clang's flags reach each through the environment,
# split into words as they are here.
build_jobs=${FUZZ_BUILD_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
objs=
: >"$out/compile.list"
for src in "$@"; do
    case $src in *.c) ;; *) continue ;; esac
    obj=$out/obj/$(echo "$src" | sed 's|/|_|g; s|\.c$|.o|')
    objs="$objs $obj"
    if [ ! -f "$obj" ] || [ -n "$(find "$srcdir/$src" "$srcdir/src" config.h -name '*.[ch]' -newer "$obj" 2>/dev/null | head -n 1)" ]; then
        # The SIMD kernels unoptimized: clang's -O1 with both sanitizers takes over ten
        # minutes on x86-avx512.c (its register blocks made for each group size), -O0
        # seconds; the sanitizers check them the same.
        case $src in
        src/kernels/x86-*.c | src/kernels/arm-*.c) opt=-O0 ;;
        *) opt=-O1 ;;
        esac
        rm -f "$obj" # a compile that fails leaves none, and the next run tries again
        echo "$src $obj $opt" >>"$out/compile.list"
    fi
done
[ ! -s "$out/compile.list" ] || FUZZ_CC_WORDS=$cc FUZZ_FLAG_WORDS="$flags" FUZZ_SRCDIR_PATH=$srcdir \
    xargs -P "$build_jobs" -n 3 sh -c '
        echo "fuzz: CC $1" >&2
        # shellcheck disable=SC2086 # the compiler and its flags are words
        exec $FUZZ_CC_WORDS $FUZZ_FLAG_WORDS "$3" -fsanitize=fuzzer-no-link -DLLMCHAT_CORE \
            -c "$FUZZ_SRCDIR_PATH/$1" -o "$2"' sh <"$out/compile.list" || {
    echo "fuzz: a source did not compile (above)" >&2
    exit 1
}

# ---- the targets, linked FUZZ_BUILD_JOBS at a time, then run one after another ----
libs="$(pkg-config --libs libpcre2-8 2>/dev/null || echo -lpcre2-8) ${FUZZ_EXTRA_LIBS:-} -lm"
# shellcheck disable=SC2086 # the targets are words
printf '%s\n' $targets | FUZZ_CC_WORDS=$cc FUZZ_FLAG_WORDS="$flags" FUZZ_SRCDIR_PATH=$srcdir \
    FUZZ_OBJ_WORDS=$objs FUZZ_LIB_WORDS=$libs FUZZ_OUT=$out \
    xargs -P "$build_jobs" -n 1 sh -c '
        echo "fuzz: LINK fuzz_$1" >&2
        # shellcheck disable=SC2086 # the compiler, its flags, objects and libraries are words
        exec $FUZZ_CC_WORDS $FUZZ_FLAG_WORDS -fsanitize=fuzzer "$FUZZ_SRCDIR_PATH/fuzz/fuzz_$1.c" \
            $FUZZ_OBJ_WORDS $FUZZ_LIB_WORDS -o "$FUZZ_OUT/fuzz_$1"' sh || {
    echo "fuzz: a target did not link (above)" >&2
    exit 1
}

status=0
summary=
for t in $targets; do
    bin=$out/fuzz_$t

    work=$out/corpus/$t
    crashes=$out/crashes/$t
    mkdir -p "$work" "$crashes"
    cp "$srcdir/fuzz/corpus/$t/"* "$work/" 2>/dev/null || true
    # The real files, whole for the small ones, their first 4 KiB for the big
    # (mutating megabyte inputs is slow; the crafted seeds are whole tiny models).
    case $t in
    model)
        for f in stories260K.bin stories260K_q80.bin aidreams260K.bin stories260K-gguf-v1-head.gguf; do
            head -c 4096 "$srcdir/tests/data/$f" >"$work/real-head-$f"
        done ;;
    tokenizer)
        for f in tok512.bin babyllama_tok105.bin aidreams_tok512.bin; do
            cp "$srcdir/tests/data/$f" "$work/real-$f"
        done ;;
    gguf)
        for f in stories260K.gguf stories260K-q8_0.gguf ggml-vocab-llama-spm.gguf; do
            head -c 65536 "$srcdir/tests/data/$f" >"$work/real-head-$f"
        done
        cp "$srcdir/tests/data/gguf-types/rand256-q4_0.gguf" "$work/real-rand256-q4_0.gguf" ;;
    control_vector)
        cp "$srcdir/tests/data/control_vector/happy.gguf" "$work/real-happy.gguf" ;;
    esac
    dict=
    [ -f "$srcdir/fuzz/$t.dict" ] && dict="-dict=$srcdir/fuzz/$t.dict"
    log=$out/$t.log
    echo "fuzz: running fuzz_$t for ${seconds}s (log: $out/$t.log)" >&2
    # Loader inputs hold whole tiny models and tokenizers; text inputs stay small.
    max_len=4096
    case $t in model | tokenizer | gguf | trace | control_vector) max_len=65536 ;; esac
    rc=0
    # shellcheck disable=SC2086
    nice -n "$nice_level" "$bin" -max_total_time="$seconds" -max_len=$max_len -timeout=25 \
        -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$crashes/" $dict \
        "$work" >"$log" 2>&1 || rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)
    found=$(find "$crashes" -type f | wc -l)
    line="fuzz_$t: ${execs:-?} executions, coverage ${cov:-?} edges (${ft:-?} features), $found crash files"
    [ "$rc" -eq 0 ] || line="$line, exit status $rc (see $log)"
    echo "fuzz: $line" >&2
    summary="$summary$line
"
    if [ "$rc" -ne 0 ] || [ "$found" -gt 0 ]; then
        status=1
    fi
done
printf '%s' "$summary" >"$out/summary.txt"
printf '\n%s' "$summary"
exit $status
