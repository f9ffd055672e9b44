#!/usr/bin/env bash
# Run every test suite of the repo (called by `make test`, after `make deps ui`).
#
#   pytest                  the whole Python suite (testpaths in pyproject.toml)
#   pytest -m kernel        the knfsd tests in a QEMU guest (tests/kernel)
#   npm --prefix frontend test    frontend unit tests
#   npm --prefix tests/e2e test   end-to-end tests in headless Chromium
#
# Every suite runs even if an earlier one failed; the exit status is non-zero
# if any failed. pytest's own exit codes count as they are (5 = "no tests
# collected" is a failure). A suite whose package.json does not exist yet is
# reported as skipped, never as passed. Extra pytest arguments: PYTEST_ARGS.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=()
failed=()
skipped=()

run_suite() {  # name, command...
    local name=$1; shift
    echo
    echo "==> $name: $*"
    local start=$SECONDS
    "$@"
    local rc=$?
    if [ "$rc" -eq 0 ]; then
        passed+=("$name")
    else
        failed+=("$name (exit $rc)")
    fi
    echo "==> $name: exit $rc after $((SECONDS - start))s"
}

# shellcheck disable=SC2086  # PYTEST_ARGS is deliberately word-split
run_suite pytest .venv/bin/pytest ${PYTEST_ARGS:-}

# The knfsd guest (tests/kernel, marker `kernel`): boots QEMU; skips with the reason
# when not root or qemu/debootstrap are missing.
run_suite kernel .venv/bin/pytest -m kernel tests/kernel ${PYTEST_ARGS:-}

for dir in frontend tests/e2e; do
    if [ -f "$dir/package.json" ]; then
        run_suite "$dir" npm --prefix "$dir" test
    else
        echo
        echo "==> $dir: SKIPPED: $dir/package.json does not exist yet"
        skipped+=("$dir")
    fi
done

join() { local IFS=','; echo "$*" | sed 's/,/, /g'; }
echo
summary="suites passed: ${#passed[@]}/$(( ${#passed[@]} + ${#failed[@]} + ${#skipped[@]} ))"
[ "${#passed[@]}" -gt 0 ] && summary+=" [$(join "${passed[@]}")]"
[ "${#failed[@]}" -gt 0 ] && summary+="; FAILED: $(join "${failed[@]}")"
[ "${#skipped[@]}" -gt 0 ] && summary+="; skipped (not present yet): $(join "${skipped[@]}")"
if [ "${#failed[@]}" -gt 0 ]; then
    echo "make test: FAILED — $summary"
    exit 1
fi
echo "make test: OK — $summary"
