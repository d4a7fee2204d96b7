#!/usr/bin/env bash
# tests/install/check.sh - checks that an installed uepoll is usable.
#
# For each library kind (static, the default, and shared: BUILD_SHARED_LIBS),
# it configures a Release build with CMAKE_INSTALL_PREFIX set to a temporary
# directory, builds and installs it, checks the installed layout, then builds
# and runs consumers that see only the installed tree:
#   1. tests/install/consumer.c with `cc $(pkg-config --cflags --libs uepoll)`
#      (and, for the static kind, with `pkg-config --static` as well);
#   2. tests/install/consumer.cpp the same way with c++, when the installed
#      tree has uepoll/uepoll.hpp;
#   3. tests/install/cmake_consumer with find_package(uepoll REQUIRED) and
#      uepoll::uepoll, as a C+C++ project and as a C-only project;
#   4. the installed C header alone, as strict C99 with -Wpedantic -Werror,
#      and each installed C++ header alone (uepoll.hpp and the headers
#      it includes), as C++20 with -Werror;
#   5. tests/compat/epoll_program.c built with -include uepoll/compat.h
#      through pkg-config, whose output must equal its plain build's.
# Every binary is run and must print its "ok" line and exit 0.  Also checked:
# the installed headers include version.h, export.h and testing.h; the
# version in version.h, uep_version(), pkg-config --modversion and the CMake
# package agree; nothing but the library, headers and package files is
# installed (no uepoll-bench, no examples) but libuepoll-preload.so and
# bin/uepoll-run, which must run a program and write UEPOLL_STATS; and for
# the shared library, its SONAME, and that it exports exactly the functions
# the installed headers declare (nm -D: every uep_* and uepoll::detail:: function, nothing else).
#
# Environment: BUILD_DIR (default <repo>/build-install), JOBS (default 2),
#   UEPOLL_INSTALL_KINDS (default "static shared"), CC, CXX,
#   UEPOLL_WERROR (default OFF; scripts/test.sh sets ON).
# Exit status: 0 when every check passed, 1 otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/tests/install"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-install}"
JOBS="${JOBS:-2}"
KINDS="${UEPOLL_INSTALL_KINDS:-static shared}"
CC="${CC:-cc}"
CXX="${CXX:-c++}"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/uepoll-install.XXXXXX")"
trap 'rm -rf "$TMP"' EXIT

step() { printf 'install-check: %s\n' "$*"; }
run() { printf '+ %s\n' "$*"; "$@"; }
fail() { printf 'install-check: FAIL: %s\n' "$*" >&2; exit 1; }

expect_ok() {   # expect_ok LABEL COMMAND...: runs it, wants rc 0 and an ok line
  local label="$1" out rc=0; shift
  out="$("$@" 2>&1)" || rc=$?
  if ((rc)); then printf '%s\n' "$out"; fail "$label exited $rc"; fi
  printf '%s\n' "$out"
  grep -q ': ok$' <<<"$out" || fail "$label printed no ok line"
}

header_version() {   # header_version PREFIX: MAJOR.MINOR.PATCH from version.h
  local v="$1/include/uepoll/version.h"
  printf '%s.%s.%s' "$(awk '/^#define UEPOLL_VERSION_MAJOR /{print $3}' "$v")" \
    "$(awk '/^#define UEPOLL_VERSION_MINOR /{print $3}' "$v")" \
    "$(awk '/^#define UEPOLL_VERSION_PATCH /{print $3}' "$v")"
}

# check_shared_exports PREFIX LIB: the SONAME, and that the dynamic symbol
# table holds exactly the C functions the installed headers declare plus the
# uepoll::detail entry points uepoll.hpp calls.
check_shared_exports() {
  local prefix="$1" lib="$2" ver major minor want_so soname got want extra missing
  ver="$(header_version "$prefix")"
  major="${ver%%.*}"; minor="${ver#*.}"; minor="${minor%%.*}"
  if ((major == 0)); then want_so="libuepoll.so.0.$minor"; else want_so="libuepoll.so.$major"; fi
  soname="$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')"
  [[ "$soname" == "$want_so" ]] || fail "SONAME is '$soname', want $want_so (version $ver)"
  [[ -e "$(dirname "$lib")/$want_so" ]] || fail "no $want_so installed"
  step "SONAME $soname"
  got="$(nm -D --defined-only "$lib" | awk '{print $3}' | sort -u)"
  extra="$(grep -v -E '^(uep_[a-z0-9_]+|_ZN6uepoll6detail[A-Za-z0-9_]+)$' <<<"$got" || true)"
  [[ -z "$extra" ]] || fail "shared library exports internal symbols: $(tr '\n' ' ' <<<"$extra")"
  # (static inline helpers, such as compat.h's, are not library functions)
  want="$(cat "$prefix"/include/uepoll/*.h | grep -v -E '^[[:space:]]*static ' |
    grep -o -E '\buep_[a-z0-9_]+ *\(' | tr -d ' (' | sort -u)"
  missing="$(comm -23 <(printf '%s\n' "$want") <(printf '%s\n' "$got"))"
  [[ -z "$missing" ]] || fail "declared in the installed headers but not exported: $(tr '\n' ' ' <<<"$missing")"
  grep -q '^_ZN6uepoll6detail' <<<"$got" || fail "uepoll::detail entry points (uepoll.hpp) not exported"
  step "exports: $(wc -l <<<"$got") symbols, only the public API"
}

check_kind() {
  local kind="$1" shared=OFF
  [[ "$kind" == shared ]] && shared=ON
  local bdir="$BUILD_DIR/$kind" prefix="$TMP/$kind/prefix" out="$TMP/$kind/bin"
  mkdir -p "$out"
  step "---- $kind library: build, install into $prefix"
  run cmake -S "$ROOT" -B "$bdir" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS="$shared" \
      -DUEPOLL_BUILD_TESTS=OFF -DUEPOLL_BUILD_BENCH=OFF -DUEPOLL_BUILD_FUZZ=OFF \
      -DUEPOLL_BUILD_EXAMPLES=OFF -DUEPOLL_SANITIZE= -DUEPOLL_WERROR="${UEPOLL_WERROR:-OFF}" >/dev/null
  run cmake --build "$bdir" -j "$JOBS"
  run cmake --install "$bdir" >/dev/null

  # ---- layout
  local pc cfg lib libdir
  pc="$(find "$prefix" -name uepoll.pc -path '*/pkgconfig/*' | head -n1)"
  cfg="$(find "$prefix" -name uepollConfig.cmake | head -n1)"
  [[ -f "$prefix/include/uepoll/uepoll.h" ]] || fail "no include/uepoll/uepoll.h"
  local h
  for h in tuning.h version.h export.h testing.h compat.h; do
    [[ -f "$prefix/include/uepoll/$h" ]] || fail "no include/uepoll/$h"
  done
  # The only program installed is the preload's launcher (src/preload/).
  local progs
  progs="$(ls "$prefix/bin" 2>/dev/null | grep -v -x uepoll-run || true)"
  [[ -z "$progs" ]] || fail "programs installed by default: $progs"
  [[ -n "$pc" ]] || fail "no pkgconfig/uepoll.pc"
  [[ -n "$cfg" ]] || fail "no cmake/uepoll/uepollConfig.cmake"
  [[ -f "$(dirname "$cfg")/uepollConfigVersion.cmake" ]] || fail "no uepollConfigVersion.cmake"
  if [[ "$kind" == shared ]]; then
    lib="$(find "$prefix" -name 'libuepoll.so*' | head -n1)"
  else
    lib="$(find "$prefix" -name libuepoll.a | head -n1)"
  fi
  [[ -n "$lib" ]] || fail "no installed $kind library"
  libdir="$(dirname "$lib")"
  step "installed: $(cd "$prefix" && find . -type f | sort | tr '\n' ' ')"
  [[ "$kind" == shared ]] && check_shared_exports "$prefix" "$lib"
  # uepoll-run finds the installed libuepoll-preload.so by itself.
  [[ -x "$prefix/bin/uepoll-run" ]] || fail "no bin/uepoll-run"
  [[ -n "$(find "$prefix" -name libuepoll-preload.so)" ]] || fail "no libuepoll-preload.so"
  run "$prefix/bin/uepoll-run" --stats "$out/preload-stats" true || fail "uepoll-run does not run a program"
  grep -q '^uepoll-stats' "$out/preload-stats" || fail "uepoll-run: no UEPOLL_STATS written"
  # The lwIP socket provider (built where liblwip-dev is installed): beside
  # the preload, found by name, and started by it.
  local plib prov
  plib="$(find "$prefix" -name libuepoll-preload.so | head -n1)"
  prov="$(find "$prefix" -name libuepoll-provider-lwip.so | head -n1)"
  if [[ -n "$prov" ]]; then
    [[ "$(dirname "$prov")" == "$(dirname "$plib")" ]] || fail "libuepoll-provider-lwip.so is not beside libuepoll-preload.so"
    run "$prefix/bin/uepoll-run" --provider lwip --stats "$out/provider-stats" /bin/true \
      || fail "uepoll-run --provider lwip does not start a program"
    step "lwIP provider: installed beside the preload, loaded by name"
  fi

  # ---- pkg-config
  local pcdir pkc="pkg-config"
  pcdir="$(dirname "$pc")"
  export PKG_CONFIG_PATH="$pcdir"
  run $pkc --exists --print-errors uepoll || fail "pkg-config cannot read uepoll.pc"
  step "pkg-config --cflags --libs: $($pkc --cflags --libs uepoll)"
  step "pkg-config --static --libs: $($pkc --static --libs uepoll)"
  [[ "$($pkc --modversion uepoll)" == "$(header_version "$prefix")" ]] \
    || fail "pkg-config --modversion $($pkc --modversion uepoll) is not version.h's $(header_version "$prefix")"
  local modes=(plain) rpath=()
  [[ "$kind" == static ]] && modes+=(static)
  [[ "$kind" == shared ]] && rpath=("-Wl,-rpath,$libdir")
  for m in "${modes[@]}"; do
    local flags
    if [[ "$m" == static ]]; then
      flags="$($pkc --cflags --libs --static uepoll)"
    else
      flags="$($pkc --cflags --libs uepoll)"
    fi
    # shellcheck disable=SC2086
    run "$CC" -Wall -Wextra -Werror "$HERE/consumer.c" -o "$out/consumer_pc_$m" \
        $flags "${rpath[@]}" || fail "C consumer does not build with pkg-config ($m)"
    expect_ok "C consumer (pkg-config, $m)" "$out/consumer_pc_$m"
    # <uepoll/compat.h>: tests/compat's program, unchanged, built against the
    # installed tree prints what its plain build prints.
    run "$CC" -Wall -Wextra -Werror "$ROOT/tests/compat/epoll_program.c" -o "$out/compat_plain_$m" \
        || fail "tests/compat/epoll_program.c does not build plainly"
    # shellcheck disable=SC2086
    run "$CC" -Wall -Wextra -Werror -include uepoll/compat.h "$ROOT/tests/compat/epoll_program.c" \
        -o "$out/compat_pc_$m" $flags "${rpath[@]}" || fail "compat.h program does not build ($m)"
    [[ "$("$out/compat_plain_$m")" == "$("$out/compat_pc_$m")" ]] \
        || fail "compat.h program prints otherwise than its plain build ($m)"
    step "compat.h program ($m): same output as the plain build"
    if [[ -f "$prefix/include/uepoll/uepoll.hpp" ]]; then
      # shellcheck disable=SC2086
      run "$CXX" -std=c++20 -Wall -Wextra -Werror "$HERE/consumer.cpp" \
          -o "$out/consumerxx_pc_$m" $flags "${rpath[@]}" \
          || fail "C++ consumer does not build with pkg-config ($m)"
      expect_ok "C++ consumer (pkg-config, $m)" "$out/consumerxx_pc_$m"
    else
      step "no uepoll/uepoll.hpp installed: C++ consumer skipped"
    fi
  done
  unset PKG_CONFIG_PATH

  # ---- the C header alone, as strict C99 (it promises to be valid C99)
  run "$CC" -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Wpedantic -Werror \
      -fsyntax-only -I"$prefix/include" "$HERE/consumer.c" \
      || fail "uepoll.h is not clean C99"

  # ---- each installed C++ header alone (uepoll.hpp is an umbrella over
  # result.hpp, fd.hpp, epoll.hpp, ...: the C++ consumer above needs them
  # all installed; here each must also compile on its own)
  local hpp
  for hpp in "$prefix"/include/uepoll/*.hpp; do
    [[ -f "$hpp" ]] || continue
    run "$CXX" -std=c++20 -Wall -Wextra -Werror -fsyntax-only -I"$prefix/include" \
        -include "uepoll/${hpp##*/}" -x c++ /dev/null \
        || fail "installed uepoll/${hpp##*/} does not compile alone"
  done

  # ---- find_package(uepoll)
  local langs
  for langs in "C;CXX" "C"; do
    local cdir="$bdir/cmake_consumer_${langs//;/_}"
    rm -rf "$cdir"
    run cmake -S "$HERE/cmake_consumer" -B "$cdir" -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH="$prefix" -DCONSUMER_LANGUAGES="$langs" \
        || fail "find_package(uepoll) consumer does not configure ($langs)"
    run cmake --build "$cdir" -j "$JOBS" \
        || fail "find_package(uepoll) consumer does not build ($langs)"
    expect_ok "C consumer (find_package, $langs)" "$cdir/consumer_c"
    if [[ -x "$cdir/consumer_cxx" ]]; then
      expect_ok "C++ consumer (find_package)" "$cdir/consumer_cxx"
    fi
  done
  step "---- $kind library: ok"
}

for k in $KINDS; do
  check_kind "$k"
done
step "all checks passed ($KINDS)"
