#!/usr/bin/env bash
# Makes (or makes again) the HTTP gateway's broker user on a node of deploy/broker.sh,
# with what deploy/definitions.json gives the intent-gateway role: the impersonator
# tag, its permissions and its topic permissions, read from the definitions so that
# they are written in one place. The password comes on standard input (it is not
# on this script's command line; rabbitmqctl gets it as its argument, as everywhere).
#
#   echo "$password" | deploy/gateway-user.sh NODE VHOST USER
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 3 ]] || { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 64; }
node="$1" vhost="$2" user="$3"
IFS= read -r password
ctl() { deploy/broker.sh ctl "$node" "$@" >/dev/null; }
mapfile -t grant < <(python3 - deploy/definitions.json <<'PY'
import json, sys
definitions = json.load(open(sys.argv[1]))
tags = next(u["tags"] for u in definitions["users"] if u["name"] == "intent-gateway")
permission = next(p for p in definitions["permissions"] if p["user"] == "intent-gateway")
topic = next(t for t in definitions["topic_permissions"] if t["user"] == "intent-gateway")
for line in [",".join(tags), permission["configure"], permission["write"], permission["read"], topic["exchange"], topic["write"], topic["read"]]:
    print(line)
PY
)
ctl delete_user "$user" 2>/dev/null || true
ctl add_user "$user" "$password"
ctl set_user_tags "$user" "${grant[0]//,/ }"
ctl set_permissions -p "$vhost" "$user" "${grant[1]}" "${grant[2]}" "${grant[3]}"
ctl set_topic_permissions -p "$vhost" "$user" "${grant[4]}" "${grant[5]}" "${grant[6]}"
