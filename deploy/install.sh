#!/usr/bin/env bash
# Installs the Debian packages IntentQueue builds and runs with, when missing:
# rabbitmq-c, SQLite and libmicrohttpd headers, the RabbitMQ server, amqp-tools (a non-Swift
# client used by the interop test), the sqlite3 shell and curl (the quickstart's HTTP client).
# With --test-tools, also what the gateway's outside checks use (deploy/gateway-check.sh):
# Chromium and its driver, and from PyPI Selenium and schemathesis (with pip, from Debian
# when python3 has none).
set -euo pipefail

packages=(librabbitmq-dev libsqlite3-dev libmicrohttpd-dev rabbitmq-server amqp-tools sqlite3 curl)
# The quickstart reads the broker's definitions with python3 (deploy/gateway-user.sh); a minimal Debian has none.
command -v python3 >/dev/null || packages+=(python3)
python_packages=()
if [[ "${1:-}" == "--test-tools" ]]; then
    packages+=(chromium chromium-driver)
    python3 -c 'import selenium' 2>/dev/null || python_packages+=(selenium==4.51.0)
    command -v schemathesis >/dev/null || python_packages+=(schemathesis==4.32.5)
    if ((${#python_packages[@]} > 0)) && ! python3 -m pip --version >/dev/null 2>&1; then
        packages+=(python3-pip)
    fi
fi
missing=()
for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
sudo=()
if [[ $(id -u) -ne 0 ]]; then
    sudo=(sudo)
fi
if ((${#missing[@]} > 0)); then
    echo "install.sh: installing ${missing[*]}"
    if ((${#sudo[@]} > 0)) && ! command -v sudo >/dev/null; then
        echo "install.sh: need root (or sudo) to install ${missing[*]}" >&2
        exit 69
    fi
    export DEBIAN_FRONTEND=noninteractive
    "${sudo[@]}" apt-get update -qq
    # The package's own service start is not wanted: deploy/broker.sh runs the node on loopback, and a
    # system broker started on 5672 (on every interface) would answer in its place. Debian's maintainer
    # scripts start no service while /usr/sbin/policy-rc.d says 101; one is put there for the install
    # when the machine has none.
    policy=/usr/sbin/policy-rc.d
    if [[ ! -e $policy ]]; then
        printf '#!/bin/sh\nexit 101\n' | "${sudo[@]}" tee "$policy" >/dev/null
        "${sudo[@]}" chmod 755 "$policy"
        trap '"${sudo[@]}" rm -f "$policy"' EXIT
    fi
    "${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    # Nor started at the next boot, where one is enabled.
    if [[ " ${missing[*]} " == *" rabbitmq-server "* ]] && command -v systemctl >/dev/null; then
        "${sudo[@]}" systemctl disable rabbitmq-server >/dev/null 2>&1 || true
    fi
fi
if ((${#python_packages[@]} > 0)); then
    echo "install.sh: installing ${python_packages[*]} from PyPI"
    pip=(python3 -m pip install --quiet --disable-pip-version-check)
    errors="$(mktemp)"
    if ! "${pip[@]}" "${python_packages[@]}" 2>"$errors"; then
        # Debian's own python3 is "externally managed": its pip installs only when told to. Any other failure is said.
        if ! grep -q "externally-managed-environment" "$errors"; then
            cat "$errors" >&2
            rm -f "$errors"
            exit 1
        fi
        if ((${#sudo[@]} > 0)) && ! command -v sudo >/dev/null; then
            echo "install.sh: need root (or sudo) to install ${python_packages[*]}" >&2
            exit 69
        fi
        "${sudo[@]}" "${pip[@]}" --break-system-packages "${python_packages[@]}"
    fi
    rm -f "$errors"
fi
command -v swift >/dev/null || { echo "install.sh: the Swift 6 toolchain is not on PATH" >&2; exit 69; }
