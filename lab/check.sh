#!/usr/bin/env bash
# Write a stage yourself, and check it with the course's own tests.
#
#   lab/check.sh --start NN                 copy stage NN's starting file to mine/NN.cpp
#   lab/check.sh NN FILE [--real] [--only NAME]
#                                           build FILE as stage NN's tiny version and check it
#   lab/check.sh NN --ours [--real] [--only NAME]
#                                           the same, with the repository's own tiny version
#   lab/check.sh --help
#
# NN is 01 to 06. FILE takes the place of NN_*/tiny.cpp: it defines that file's fetch_all (see
# NN_*/tiny.hpp), and is built with the stage's tiny_main.cpp and common/, in build-check/, with
# -Wall -Wextra but not -Werror. The checks start a lab server of their own on a free loopback
# port, then print a checklist, one line per check: `[ok] name`, or `[FAIL] name: expected ...,
# got ...; hint: ...; reproduce: ...`. The core level (the default) is the core of the conformance
# suite, plus the checks of what the stage is about; --real adds the rest of the suite (deadlines,
# a server that never answers, a second address, ...) for a file grown into the full stage.
# --only NAME runs one check.
#
# mine/ is not part of the repository (.gitignore): `git pull` never touches it, and --start never
# writes over a file that is already there.
#
# Exit status: 0 every check passed; 1 a check failed, or FILE does not compile (the compiler's
# output comes first); 2 bad usage.
set -uo pipefail
cd "$(dirname "$0")/.."

usage() {
    sed -n '2,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
}

bad_usage() {
    echo "lab/check.sh: $1" >&2
    echo "usage: lab/check.sh --start NN | lab/check.sh NN FILE [--real] [--only NAME] | lab/check.sh NN --ours [--real] [--only NAME]" >&2
    exit 2
}

stage_folder() {
    case "$1" in
        01) echo 01_blocking ;;
        02) echo 02_threads ;;
        03) echo 03_nonblocking ;;
        04) echo 04_callbacks ;;
        05) echo 05_generators ;;
        06) echo 06_coroutines ;;
        *) return 1 ;;
    esac
}

[ $# -gt 0 ] || bad_usage "which stage, and which file?"
case "$1" in
    -h|--help) usage; exit 0 ;;
    --start)
        [ $# -eq 2 ] || bad_usage "--start takes a stage: --start 01"
        stage_folder "$2" >/dev/null || bad_usage "no stage '$2': the stages are 01 to 06"
        mkdir -p mine
        if [ -e "mine/$2.cpp" ]; then
            echo "lab/check.sh: mine/$2.cpp is there already; it is left as it is (remove it to start again)" >&2
            exit 1
        fi
        cp "lab/check/start/$2.cpp" "mine/$2.cpp"
        echo "mine/$2.cpp: stage $2's starting file. Write it, then check it with: lab/check.sh $2 mine/$2.cpp"
        exit 0 ;;
esac

stage=$1
folder=$(stage_folder "$stage") || bad_usage "no stage '$stage': the stages are 01 to 06"
shift
[ $# -gt 0 ] || bad_usage "which file? lab/check.sh $stage mine/$stage.cpp (or --ours)"
if [ "$1" = --ours ]; then
    file=$folder/tiny.cpp
    command="lab/check.sh $stage --ours"
else
    file=$1
    [ -f "$file" ] || bad_usage "no file '$file'"
    command="lab/check.sh $stage $file"
fi
shift
runner_args=()
while [ $# -gt 0 ]; do
    case "$1" in
        --real) runner_args+=(--real) ;;
        --only)
            [ $# -ge 2 ] || bad_usage "--only takes the name of a check"
            runner_args+=(--only "$2"); shift ;;
        *) bad_usage "unknown option '$1'" ;;
    esac
    shift
done

# build-check/: the checker's own build folder, apart from the README's build/. It is configured
# again only when the file or the stage changes.
build=build-check
log=$build/check.log
path=$(realpath "$file")
mkdir -p "$build"
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt" 2>/dev/null; }
if [ ! -f "$build/CMakeCache.txt" ]; then
    echo "lab/check.sh: a first run: building the checker in $build/ (a few minutes, once)" >&2
fi
if [ "$(cached SIXWAYS_CHECK_FILE)" != "$path" ] || [ "$(cached SIXWAYS_CHECK_STAGE)" != "$stage" ]; then
    if ! cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DSIXWAYS_WERROR=OFF \
            -DSIXWAYS_CHECK_FILE="$path" -DSIXWAYS_CHECK_STAGE="$stage" >"$log" 2>&1; then
        cat "$log" >&2
        echo "lab/check.sh: CMake could not configure $build/ (above)" >&2
        exit 1
    fi
fi
# The compiler's output (warnings too), without the build's progress lines.
if ! cmake --build "$build" --parallel "$(nproc)" --target "mine_$stage" >"$log" 2>&1; then
    grep -v -E '^\[ *[0-9]+%\]|^gmake|^make' "$log"
    echo "lab/check.sh: $file does not compile as stage $stage's tiny.cpp (the compiler's output is above)"
    exit 1
fi
grep -E 'warning:' -A3 "$log" || true

echo "checking $file as $folder/tiny.cpp${runner_args[*]:+ (${runner_args[*]})}"
"$build/bin/mine_$stage" --command "$command" "${runner_args[@]}"
status=$?
if [ $status -eq 0 ]; then
    echo "every check passed"
fi
exit $status
