#!/usr/bin/env bash
# Installs the Debian packages IntentQueue builds and runs with, when missing:
# rabbitmq-c, SQLite and libmicrohttpd headers, the RabbitMQ server, amqp-tools (a non-Swift
# client used by the interop test) and the sqlite3 shell.
set -euo pipefail

packages=(librabbitmq-dev libsqlite3-dev libmicrohttpd-dev rabbitmq-server amqp-tools sqlite3)
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
