#!/usr/bin/env bash
# One-step set-up of workbench (the README's set-up line; .ci/run runs it too):
#   1. the system packages the main job needs, where this user may install them (root, or sudo):
#      bubblewrap (the execution sandbox) and libgomp1 (OpenMP, used by the prebuilt llama.cpp);
#      with --java also a JDK and libjavatuples-java (the Java plugin's runner), with --browser
#      chromium and playwright (the report's browser test), with --spark a Java 17+ runtime where
#      none is found (dedup --engine spark). Elsewhere it says what to install and goes on.
#   2. a virtual environment (default .venv) with workbench, its local models (prebuilt llama.cpp,
#      onnxruntime embeddings; no compiler, no torch), the test tools and the language plugins;
#      with --spark also the spark extra (pyspark 4, which bundles Spark).
# Usage: bash setup.sh [--venv DIR] [--java] [--browser] [--spark] [--no-system]
set -euo pipefail
cd "$(dirname "$0")"

VENV=.venv
PACKAGES=(bubblewrap libgomp1)
EXTRAS="local,test"
SYSTEM=1
SPARK=0
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) VENV="$2"; shift ;;
    --java) PACKAGES+=(default-jdk-headless libjavatuples-java) ;;
    --browser) PACKAGES+=(chromium); EXTRAS="$EXTRAS,browser" ;;
    --spark) SPARK=1; EXTRAS="$EXTRAS,spark" ;;
    --no-system) SYSTEM=0 ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option $1 (see bash setup.sh --help)" >&2; exit 2 ;;
  esac
  shift
done

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
  # a fresh machine has no package lists yet: update only when the first try fails
  "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 || {
    "${sudo[@]}" apt-get update -qq >/dev/null &&
      "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
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
  -e ".[$EXTRAS]" -e plugins/workbench-java -e plugins/workbench-cpp
echo "setup.sh: done; activate with: . $VENV/bin/activate"
