#!/bin/sh
# Sets EventStoreDB's admin password (from the default on first run) and makes or updates a user per
# app, in the group campaign-ops-apps (not the built-in $ops, which may also shut nodes down and
# scavenge), which the default ACL below lets read and append to streams and read $all, and nothing
# more (deleting streams and changing their metadata stay with $admins).
# Run by the Job eventstore-users (prod); idempotent. Reads the passwords of campaign-ops-datastores.
set -eu
ES="https://eventstore:2113"
CA=/etc/eventstore-ca/ca.crt
call() { # call USER:PASSWORD METHOD PATH [BODY [CONTENT TYPE, default application/json]]
  curl -sS -o /dev/null -w '%{http_code}' --cacert "$CA" -u "$1" -X "$2" -H "Content-Type: ${5:-application/json}" ${4:+--data "$4"} "$ES$3"
}
until curl -sS -o /dev/null --cacert "$CA" "$ES/health/live"; do echo "waiting for $ES"; sleep 5; done

ADMIN="admin:$EVENTSTORE_ADMIN_PASSWORD"
if [ "$(call "$ADMIN" GET /users/admin)" != 200 ]; then
  code=$(call admin:changeit POST /users/admin/command/reset-password "{\"newPassword\":\"$EVENTSTORE_ADMIN_PASSWORD\"}")
  [ "$code" = 200 ] || { echo "cannot set the admin password (HTTP $code)"; exit 1; }
  echo "admin password set"
fi

for variable in $(env | sed -n 's/^\(EVENTSTORE_PASSWORD_[A-Z_]*\)=.*/\1/p'); do
  user=$(echo "${variable#EVENTSTORE_PASSWORD_}" | tr 'A-Z_' 'a-z-')
  password=$(printenv "$variable")
  code=$(call "$ADMIN" POST /users/ "{\"loginName\":\"$user\",\"fullName\":\"$user\",\"groups\":[\"campaign-ops-apps\"],\"password\":\"$password\"}")
  if [ "$code" = 409 ]; then
    code=$(call "$ADMIN" POST "/users/$user/command/reset-password" "{\"newPassword\":\"$password\"}")
  fi
  case "$code" in 200|201) echo "user $user ready";; *) echo "user $user: HTTP $code"; exit 1;; esac
done

settings='{"$userStreamAcl":{"$r":["$admins","campaign-ops-apps"],"$w":["$admins","campaign-ops-apps"],"$d":"$admins","$mr":["$admins","campaign-ops-apps"],"$mw":"$admins"},"$systemStreamAcl":{"$r":["$admins","campaign-ops-apps"],"$w":"$admins","$d":"$admins","$mr":"$admins","$mw":"$admins"}}'
event="[{\"eventId\":\"$(cat /proc/sys/kernel/random/uuid)\",\"eventType\":\"update-default-acl\",\"data\":$settings}]"
# Over the HTTP stream API (EVENTSTORE_ENABLE_ATOM_PUB_OVER_HTTP, set in datastores-secured.yaml).
code=$(call "$ADMIN" POST '/streams/$settings' "$event" 'application/vnd.eventstore.events+json')
case "$code" in 200|201) echo "default ACL set";; *) echo "default ACL: HTTP $code"; exit 1;; esac
