#!/usr/bin/env bash
# Debian packages the harness needs: Prometheus 2.42 (scrapes the node emulator) and libfaketime (an operator
# replica with a skewed clock, tests/chaos/test_leadership.py). Idempotent.
set -euo pipefail
missing=()
command -v prometheus >/dev/null 2>&1 || [ -x /usr/bin/prometheus ] || missing+=(prometheus)
command -v faketime >/dev/null 2>&1 || missing+=(faketime)
if [ ${#missing[@]} -eq 0 ]; then
  echo "system packages present"
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-system-deps: need root to install ${missing[*]} (run: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "installed ${missing[*]}"
