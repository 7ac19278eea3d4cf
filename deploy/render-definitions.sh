#!/usr/bin/env bash
# Prints deploy/definitions.json with each user's password hash filled in, ready
# for RabbitMQ to import. definitions.json itself holds no secret: its users have
# an empty hash, which no password matches, so an unrendered import creates users
# that cannot log in rather than users with a known password.
#
#   deploy/render-definitions.sh PASSWORD_DIR [DEFINITIONS]
#
# PASSWORD_DIR holds <user>.password for every user of the definitions (the
# first line is the password; deploy/secrets/README.md says how to make them).
# The hash is RabbitMQ's rabbit_password_hashing_sha256,
# base64(salt + SHA-256(salt + password)) with a fresh 4-byte salt. Passwords go
# through pipes only, never on a command line. Needs bash, openssl and base64.
#
#   compose.yaml: the rabbitmq service runs this at every start
#   a broker on a host: deploy/render-definitions.sh deploy/secrets | sudo rabbitmqctl import_definitions
set -euo pipefail

fail() {
    echo "render-definitions.sh: $*" >&2
    exit 1
}

[[ $# -ge 1 && $# -le 2 ]] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
dir="$1"
definitions="${2:-$(dirname "${BASH_SOURCE[0]}")/definitions.json}"
[[ -r "$definitions" ]] || fail "cannot read $definitions"
command -v openssl >/dev/null || fail "openssl is not installed"

salt="$(mktemp)"
trap 'rm -f "$salt"' EXIT
rendered="$(cat "$definitions")"
# One user per line, as definitions.json writes them: {"name": "…", "password_hash": "", …}
users="$(sed -n 's/.*{"name": "\([^"]*\)", "password_hash": "".*/\1/p' "$definitions")"
[[ -n "$users" ]] || fail "$definitions has no user waiting for a password"
for user in $users; do
    file="$dir/$user.password"
    [[ -r "$file" ]] || fail "cannot read $file (deploy/secrets/README.md says how to create it)"
    password=""
    IFS= read -r password <"$file" || true
    password="${password%$'\r'}"
    [[ -n "$password" ]] || fail "$file is empty"
    head -c 4 /dev/urandom >"$salt"
    hash="$({ cat "$salt"; printf '%s' "$password"; } | openssl dgst -sha256 -binary | cat "$salt" - | base64 | tr -d '\n')"
    before="{\"name\": \"$user\", \"password_hash\": \"\""
    after="{\"name\": \"$user\", \"password_hash\": \"$hash\""
    rendered="${rendered/"$before"/"$after"}"
    [[ "$rendered" == *"$after"* ]] || fail "could not fill in the hash of $user"
done
printf '%s\n' "$rendered"
