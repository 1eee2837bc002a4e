#!/usr/bin/env bash
# Installs the Debian 12 packages upguard needs, only those that are missing. Idempotent.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libxxhash-dev nlohmann-json3-dev libgtest-dev libbenchmark-dev libsqlite3-dev
  python3 python3-dev python3-torch libtorch-dev pybind11-dev python3-pybind11
  python3-numpy python3-pytest python3-torchvision
  prometheus  # tests/e2e/test_machines_sources.py starts its own Prometheus (and promtool)
  chromium    # tests/e2e/test_html_report.py opens the HTML reports headless
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2
    exit 2
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
# Debian's prometheus starts a system service where it can; the tests start their own on a free
# port, so leave none running.
if [[ " ${missing[*]} " == *" prometheus "* ]]; then
  $SUDO systemctl disable --now prometheus >/dev/null 2>&1 || true
  $SUDO service prometheus stop >/dev/null 2>&1 || true
fi
