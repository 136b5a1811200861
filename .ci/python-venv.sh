# Sourced by the CI scripts that run Python test tools (schemathesis, the
# griptape clients): `python_venv <name> <pip install arguments>...` prints
# the path of a virtualenv under the cache holding them, made once per Python
# version and again when the arguments change (or the last install failed).
# A Python of at least 3.12: schemathesis' coverage phase crashes CPython 3.11
# ("AST constructor recursion depth mismatch"). Debian's python3 is 3.11 here;
# the machines' pyenv has newer ones.
python_venv() {
  local name=$1; shift
  local cache=${LOOM_CI_CACHE:-$HOME/.cache/loom-ci}
  local python="" candidate
  for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.13*/bin/python3 "$HOME"/.pyenv/versions/3.12*/bin/python3 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      python=$(command -v "$candidate"); break
    fi
  done
  if [ -z "$python" ]; then
    echo "needs Python >= 3.12; none found" >&2
    return 1
  fi
  local venv="$cache/$name-$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  # What is installed, as recorded once it was: the pip requirement leads, so a
  # venv made before pip was upgraded first is made again.
  local wanted="pip>=25.0.1 $*"
  if [ ! -f "$venv/.installed" ] || [ "$(cat "$venv/.installed")" != "$wanted" ]; then
    echo "installing $* into $venv" >&2
    rm -f "$venv/.installed"
    "$python" -m venv "$venv" >&2
    # A current pip first: the one a Python ships with may be years old, and
    # pip 24's resolver gave up on griptape's OpenTelemetry extras once newer
    # releases of them came out ("ResolutionImpossible"); pip 26 resolves them.
    "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade "pip>=25.0.1" >&2 || return 1
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$@" >&2 || return 1
    echo "$wanted" >"$venv/.installed"
  fi
  echo "$venv"
}
