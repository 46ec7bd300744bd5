#!/bin/sh
# The Python tests' guard: without a Python environment they are skipped (ctest status 77), unless
# DTF_TEST_PYTHON=required (.ci/run), where that fails.
#   with-python.sh setup SETUP_SCRIPT VENV   make the venv (scripts/setup-python.sh)
#   with-python.sh run PYTHON COMMAND...     run COMMAND if PYTHON (the venv's) exists
missing() {
  echo "with-python.sh: $1"
  [ "$DTF_TEST_PYTHON" = required ] && exit 1
  exit 77
}
case "$1" in
  setup) "$2" "$3" >/dev/null || missing "$2 $3 failed: no Python environment" ;;
  run) [ -x "$2" ] || missing "$2 not found (scripts/setup-python.sh makes it)"; shift 2; exec "$@" ;;
  *) echo "usage: with-python.sh setup SETUP_SCRIPT VENV | run PYTHON COMMAND..." >&2; exit 2 ;;
esac
