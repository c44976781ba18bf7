# cli_lib.sh: what the command-line test scripts share. Source it after setting $tmp (a scratch
# folder); it counts failures in $fails.
fails=0

# expect CODE DESCRIPTION -- COMMAND...: runs COMMAND, checks its exit code; output in $tmp/out
expect() {
  local code=$1 what=$2
  shift 3
  "$@" >"$tmp/out" 2>&1
  local got=$?
  if [ "$got" -ne "$code" ]; then
    echo "FAIL: $what: exit $got, want $code"; sed 's/^/  | /' "$tmp/out"; fails=$((fails + 1))
  fi
}
# contains TEXT DESCRIPTION: the last output contains TEXT
contains() {
  if ! grep -qF -- "$1" "$tmp/out"; then
    echo "FAIL: $2: output lacks '$1'"; sed 's/^/  | /' "$tmp/out"; fails=$((fails + 1))
  fi
}
