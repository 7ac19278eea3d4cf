#!/usr/bin/env bash
# Installs the Debian packages IntentQueue builds and runs with, when missing:
# rabbitmq-c, SQLite and libmicrohttpd headers, the RabbitMQ server, amqp-tools (a non-Swift
# client used by the interop test) and the sqlite3 shell. With --test-tools, also
# what the gateway's outside checks use (deploy/gateway-check.sh): Chromium and its
# driver, curl, and from PyPI Selenium and schemathesis.
set -euo pipefail

packages=(librabbitmq-dev libsqlite3-dev libmicrohttpd-dev rabbitmq-server amqp-tools sqlite3)
python_packages=()
if [[ "${1:-}" == "--test-tools" ]]; then
    packages+=(chromium chromium-driver curl)
    python3 -c 'import selenium' 2>/dev/null || python_packages+=(selenium==4.51.0)
    command -v schemathesis >/dev/null || python_packages+=(schemathesis==4.32.5)
fi
if ((${#python_packages[@]} > 0)); then
    echo "install.sh: installing ${python_packages[*]} from PyPI"
    python3 -m pip install --quiet --disable-pip-version-check "${python_packages[@]}"
fi
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if ((${#missing[@]} == 0)); then
    exit 0
fi
echo "install.sh: installing ${missing[*]}"
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "install.sh: need root (or sudo) to install ${missing[*]}" >&2; exit 69; }
    sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
# The package's own service start is not wanted: deploy/broker.sh runs the node on loopback.
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
command -v swift >/dev/null || { echo "install.sh: the Swift 6 toolchain is not on PATH" >&2; exit 69; }
