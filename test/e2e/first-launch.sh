#!/usr/bin/env bash
# Your first launch, from the repository's root: the service with local development settings, an
# account and a test key, a webhook receiver on localhost:4000, and a sandbox campaign.
export ADMIN_TOKEN=$(node -p "crypto.randomBytes(24).toString('hex')")
# webhook URLs on http:// or a private address such as 127.0.0.1: refused unless allowed (local development only)
WEBHOOK_ALLOW_HTTP=true WEBHOOK_ALLOW_PRIVATE_NETWORKS=true npm start &
until curl -sf localhost:3000/readyz > /dev/null; do sleep 1; done   # the build runs first

# an account and a test key (the key is shown once; only its hash is stored)
json() { node -pe "JSON.parse(fs.readFileSync(0)).$1"; }
ACCOUNT=$(curl -s -X POST localhost:3000/admin/v1/accounts -H "Authorization: Bearer $ADMIN_TOKEN" \
  -H 'Content-Type: application/json' -d '{"name":"Acme"}' | json data.id)
KEY=$(curl -s -X POST localhost:3000/admin/v1/accounts/$ACCOUNT/keys -H "Authorization: Bearer $ADMIN_TOKEN" \
  -H 'Content-Type: application/json' -d '{"mode":"test"}' | json data.key)

# the receiver registers itself as a webhook endpoint and prints each delivery as it comes
npm run receiver -- --key $KEY &
until curl -sf localhost:4000 > /dev/null; do sleep 1; done

# a sandbox launch: answers the dispatch `accepted`; `dispatch.completed` follows as a webhook
DISPATCH=$(curl -s -X POST localhost:3000/v1/campaigns -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d '{
  "channel": "meta_ads",
  "campaign": { "name": "Spring sale", "objective": "conversion",
    "budget": { "amount_micros": 50000000, "currency": "USD", "type": "daily" },
    "schedule": { "start_at": "2027-03-01T09:00:00Z", "timezone": "Europe/Berlin" } } }' | json data.id)
sleep 2   # the sandbox completes it within a moment
curl -s localhost:3000/v1/dispatches/$DISPATCH -H "Authorization: Bearer $KEY"; echo
curl -s localhost:3000/v1/dispatches/$DISPATCH/events -H "Authorization: Bearer $KEY"; echo   # the audit trail
# to stop: `kill %2 %1` (the receiver deletes its endpoint), or `fg` and Ctrl-C for each
