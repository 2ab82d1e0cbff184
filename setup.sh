#!/usr/bin/env bash
# One-step set-up of workbench (the README's set-up line; .ci/run runs it too):
#   1. the system packages the main job needs, where this user may install them (root, or sudo):
#      bubblewrap (the execution sandbox), time (GNU time: each sample's peak memory) and libgomp1
#      (OpenMP, used by the prebuilt llama.cpp);
#      with --java also a JDK and libjavatuples-java (the Java plugin's runner), with --browser
#      chromium and playwright (the report's browser test), with --spark a Java 17+ runtime where
#      none is found (dedup --engine spark). Elsewhere it says what to install and goes on.
#   2. a virtual environment (default .venv) with workbench, its local models (prebuilt llama.cpp,
#      onnxruntime embeddings; no compiler, no torch), the test tools and the language plugins;
#      with --spark also the spark extra (pyspark 4, which bundles Spark).
#   3. only with --native-llama: replaces the prebuilt xllamacpp (llama.cpp compiled for AVX2) with
#      the same version compiled from its source for this machine's CPU (GGML_NATIVE=ON: AVX-512,
#      VNNI, ... where the CPU has them). Needs cmake and a C++17 compiler; took 45 minutes on 2
#      loaded cores (docs/install.md: when it pays). Local answers are cached apart from the wheel's.
# Usage: bash setup.sh [--venv DIR] [--java] [--browser] [--spark] [--no-system] [--native-llama]
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PACKAGES=(bubblewrap time libgomp1)
EXTRAS="local,test"
SYSTEM=1
SPARK=0
NATIVE_LLAMA=0
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) VENV="$2"; shift ;;
    --java) PACKAGES+=(default-jdk-headless libjavatuples-java) ;;
    --browser) PACKAGES+=(chromium); EXTRAS="$EXTRAS,browser" ;;
    --spark) SPARK=1; EXTRAS="$EXTRAS,spark" ;;
    --no-system) SYSTEM=0 ;;
    --native-llama) NATIVE_LLAMA=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $1 (see bash setup.sh --help)" >&2; exit 2 ;;
  esac
  shift
done

# --native-llama compiles llama.cpp: check its tools before anything is installed
if [ "$NATIVE_LLAMA" = 1 ]; then
  for tool in cmake c++; do
    command -v "$tool" >/dev/null 2>&1 || {
      echo "setup.sh: --native-llama needs $tool (e.g. apt-get install cmake g++)" >&2; exit 1; }
  done
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "setup.sh: workbench needs Python >= 3.11 ($PYTHON is $("$PYTHON" --version 2>&1 || echo missing)); set PYTHON=..." >&2
  exit 1
fi

install_system_packages() {
  local missing=()
  for package in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=()
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
      echo "setup.sh: WARNING: not root and no sudo: install ${missing[*]} yourself (without bubblewrap samples run in a weaker sandbox)" >&2
      return 0
    fi
  fi
  echo "setup.sh: installing ${missing[*]} with apt-get"
  export DEBIAN_FRONTEND=noninteractive
  # a fresh machine has no package lists yet: update only when the first try fails; another apt-get
  # (an unattended upgrade, a second set-up) holds the dpkg lock for a while: wait for it, not fail
  local apt=("${sudo[@]}" apt-get -o DPkg::Lock::Timeout=600)
  "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    "${apt[@]}" update -qq >/dev/null &&
      "${apt[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  } || echo "setup.sh: WARNING: apt-get could not install ${missing[*]}; install them yourself" >&2
}

# pyspark 4 runs on Java 17 or later: add a runtime only where none is found
java_major() {
  local java="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  command -v "$java" >/dev/null 2>&1 || { echo 0; return; }
  "$java" -version 2>&1 | sed -n 's/.*version "\(1\.\)\{0,1\}\([0-9]*\).*/\2/p' | head -n 1
}
if [ "$SPARK" = 1 ] && [ "$(java_major)" -lt 17 ] 2>/dev/null; then
  # Debian 12 and later: the default runtime is 17+; where a named 17 exists (Ubuntu 22.04), take it
  if apt-cache show openjdk-17-jre-headless >/dev/null 2>&1; then PACKAGES+=(openjdk-17-jre-headless)
  else PACKAGES+=(default-jre-headless); fi
fi

if [ "$SYSTEM" = 1 ]; then
  if command -v apt-get >/dev/null 2>&1; then
    install_system_packages
  else
    echo "setup.sh: no apt-get here: install ${PACKAGES[*]} (or your system's equivalents) yourself" >&2
  fi
fi

[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
# an old pip (23.x, as Python 3.11 bundles it) backtracks for minutes over botocore and pandas
"$VENV/bin/python" -m pip install --disable-pip-version-check -q --upgrade "pip>=25"
# --no-compile: bytecode is written on first import instead (saves ~300 MB and ~30 s)
"$VENV/bin/python" -m pip install --disable-pip-version-check --no-compile \
  -e ".[$EXTRAS]" -e plugins/workbench-java -e plugins/workbench-cpp -e plugins/workbench-c -e plugins/workbench-go

# --native-llama: xllamacpp's own build (scripts/build.py in its sdist) compiles llama.cpp with
# GGML_NATIVE=ON unless XLLAMACPP_RELEASE is set. LLGuidance (a Rust crate cloned from GitHub at
# build time) and BoringSSL (cloned too) are switched off: JSON schemas are then constrained by
# llama.cpp's GBNF grammars, and the model server's loopback HTTP has no TLS (it never had any use
# for it). xllamacpp's setup.py links their archives unconditionally, so they are dropped from its
# link list first.
build_native_llama() {
  local python="$VENV/bin/python" version work src_dir started
  version=$("$python" -c 'from importlib.metadata import version; print(version("xllamacpp"))')
  work=$(mktemp -d "${TMPDIR:-/tmp}/xllamacpp-native-XXXXXX")
  started=$(date +%s)
  echo "setup.sh: compiling xllamacpp $version for this CPU in $work (many minutes; log: $work/build.log)"
  "$python" -m pip install --disable-pip-version-check -q "cython>=3.1" "versioneer[toml]" "setuptools>=61" wheel
  "$python" -m pip download --disable-pip-version-check -q --no-deps --no-binary :all: --no-build-isolation \
    "xllamacpp==$version" -d "$work"
  tar -xzf "$work/xllamacpp-$version.tar.gz" -C "$work"
  src_dir="$work/xllamacpp-$version"
  "$python" - "$src_dir/setup.py" <<'PATCH'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = 'INCLUDE_DIRS.append(os.path.join(CWD, "src/xllamacpp"))'
if anchor not in text:
    sys.exit(f"setup.sh: {path} changed: cannot drop the LLGuidance and SSL archives from its link list")
drop = ("EXTRA_OBJECTS = [o for o in EXTRA_OBJECTS if not o.endswith(('/libllguidance.a', '/libssl.a', "
        "'/libcrypto.a'))]  # setup.sh --native-llama: built without them\n")
open(path, "w").write(text.replace(anchor, drop + anchor, 1))
PATCH
  CMAKE_ARGS="-DLLAMA_LLGUIDANCE=OFF -DLLAMA_BUILD_BORINGSSL=OFF -DLLAMA_OPENSSL=OFF" NPROC="$(nproc)" \
    "$python" -m pip install --disable-pip-version-check --no-deps --no-build-isolation --force-reinstall \
    -v "$src_dir" >"$work/build.log" 2>&1 || {
      echo "setup.sh: compiling xllamacpp failed (see $work/build.log); the prebuilt one stays installed" >&2
      exit 1; }
  echo "setup.sh: xllamacpp compiled in $(( $(date +%s) - started )) s; llama.cpp reports:" \
    "$("$python" -c 'import xllamacpp; print(xllamacpp.get_system_info())')"
  rm -rf "$work"
}
if [ "$NATIVE_LLAMA" = 1 ]; then build_native_llama; fi
echo "setup.sh: done; activate with: . $VENV/bin/activate"
