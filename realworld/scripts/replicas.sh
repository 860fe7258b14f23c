#!/usr/bin/env bash
# Three replicas of the RealWorld application behind haproxy, on one PostgreSQL, their login
# limits shared through one Redis (issue 53), all from the project's own files:
#
#   realworld/scripts/replicas.sh                 # starts the set, prints its URL, runs until Ctrl-C
#   realworld/scripts/replicas.sh --check         # starts it, checks it, stops it
#   realworld/scripts/replicas.sh --kill          # under load, SIGKILLs a replica; counts failures
#   realworld/scripts/replicas.sh CMD [ARG...]    # starts it, runs CMD with API_URL set, stops it
#
# REPLICAS=N runs N replicas instead of three (--kill needs two at least): `REPLICAS=1
# realworld/scripts/replicas.sh realworld/scripts/measure.sh` measures one replica on
# PostgreSQL behind the same haproxy.
#
# - PostgreSQL 15 (Debian's postgresql-15: initdb and postgres from PG_BIN, the PATH or
#   /usr/lib/postgresql/15/bin): a cluster made with initdb in a temporary folder, on a free
#   port of 127.0.0.1, fsync on (a real server's settings, unlike the tests' cluster). As root,
#   it runs as the `postgres` user.
# - redis-server (Debian's), on a free port, without persistence: the login limits' budgets.
# - three replicas (STRATA_REALWORLD_BIN, or the release build), each on a free port, one
#   JWT_SECRET for all (a token from one works on the others), REDIS_URL, and
#   TRUSTED_PROXIES=127.0.0.0/8 (the client of the per-address limit is the one haproxy names
#   in X-Forwarded-For).
# - haproxy (Debian's), on a free port: round robin, a health check (GET /api/tags, which reads
#   the database) every 200 ms, a replica out after 1 failure; `option forwardfor`. A request
#   whose connection to a replica fails (refused: the replica is gone, the check has not seen
#   it yet) is sent to another (`retries 2`, `option redispatch 1`): safe for any method, since
#   the replica never got it. A request a replica got and never answered is not retried by
#   haproxy (it may have been written): the client gets a 502 and decides (--kill, below).
#
# Everything is stopped by its PID on exit (postgres with a fast shutdown), the folder removed.
# The installed tools: bash tests/tools/install.sh debian.
set -euo pipefail
cd "$(dirname "$0")/../.."

for tool in redis-server redis-cli haproxy curl python3; do
    command -v "$tool" >/dev/null || { echo "replicas.sh: $tool is not installed (bash tests/tools/install.sh debian)" >&2; exit 1; }
done
pg_bin=${PG_BIN:-}
if [ -z "$pg_bin" ]; then
    if command -v initdb >/dev/null && command -v postgres >/dev/null; then
        pg_bin=$(dirname "$(command -v postgres)")
    else
        pg_bin=/usr/lib/postgresql/15/bin
    fi
fi
[ -x "$pg_bin/initdb" ] && [ -x "$pg_bin/postgres" ] \
    || { echo "replicas.sh: initdb and postgres are not in $pg_bin (apt-get install postgresql-15; PG_BIN=<folder>)" >&2; exit 1; }

binary=${STRATA_REALWORLD_BIN:-}
if [ -z "$binary" ]; then
    cargo build --quiet --release -p strata-realworld
    binary=${CARGO_TARGET_DIR:-target}/release/strata-realworld
fi

work=$(mktemp -d)
# .ci/servers.sh: free_port, start_redis (sets redis_pid), stop_servers (every PID in `pids`).
source .ci/servers.sh
postgres_pid=
cleanup() {
    stop_servers
    if [ -n "$postgres_pid" ]; then
        kill -INT "$postgres_pid" 2>/dev/null || true
        # Not our child when it runs under runuser: wait by probing.
        for _ in $(seq 1 100); do kill -0 "$postgres_pid" 2>/dev/null || break; sleep 0.1; done
    fi
    rm -rf "$work"
}
trap cleanup EXIT

# As root, initdb and postgres refuse to run: they run as the `postgres` user.
as_postgres=()
if [ "$(id -u)" = 0 ]; then
    as_postgres=(runuser -u postgres --)
    chown postgres: "$work"
fi

# ---- PostgreSQL -----------------------------------------------------------------------
pg_port=$(free_port)
"${as_postgres[@]}" "$pg_bin/initdb" -D "$work/pg" -U conduit --auth=trust --no-instructions \
    --locale=C -E UTF8 >"$work/initdb.log" 2>&1 \
    || { cat "$work/initdb.log" >&2; exit 1; }
"${as_postgres[@]}" "$pg_bin/postgres" -D "$work/pg" -k "$work" -p "$pg_port" \
    -c listen_addresses=127.0.0.1 -c max_connections=100 >"$work/postgres.log" 2>&1 &
starter=$!
# Ready when the postmaster says so in its PID file (what pg_ctl -w reads): line 8, `ready`.
for _ in $(seq 1 300); do
    if [ -f "$work/pg/postmaster.pid" ] && [ "$(sed -n 8p "$work/pg/postmaster.pid" | tr -d ' ')" = ready ]; then
        postgres_pid=$(sed -n 1p "$work/pg/postmaster.pid")
        break
    fi
    kill -0 "$starter" 2>/dev/null || { echo "postgres exited:" >&2; cat "$work/postgres.log" >&2; exit 1; }
    sleep 0.05
done
[ -n "$postgres_pid" ] || { echo "postgres did not get ready:" >&2; cat "$work/postgres.log" >&2; exit 1; }
database_url="postgres://conduit@127.0.0.1:$pg_port/postgres"

# ---- Redis ----------------------------------------------------------------------------
redis_port=$(free_port)
start_redis "$redis_port"

# ---- the replicas (three unless REPLICAS says) -----------------------------------------
replicas=${REPLICAS:-3}
[[ "$replicas" =~ ^[1-9][0-9]?$ ]] || { echo "replicas.sh: REPLICAS=$replicas is not 1 to 99" >&2; exit 1; }
secret=$(python3 -c 'import secrets; print(secrets.token_hex(32))')
replica_ports=()
for n in $(seq "$replicas"); do
    port=$(free_port)
    replica_ports+=("$port")
    DATABASE_URL=$database_url REDIS_URL="redis://127.0.0.1:$redis_port/" \
        TRUSTED_PROXIES=127.0.0.0/8 JWT_SECRET=$secret PORT=$port \
        "$binary" >"$work/replica-$n.log" 2>&1 &
    pids+=("$!")
done
# Started at once: the migrations run once (sqlx's advisory lock), the others wait for them.
for n in $(seq "$replicas"); do
    port=${replica_ports[$((n - 1))]}
    for _ in $(seq 1 300); do
        curl -sf -o /dev/null "http://127.0.0.1:$port/api/tags" && continue 2
        kill -0 "${pids[-replicas - 1 + n]}" 2>/dev/null || { echo "replica $n exited:" >&2; cat "$work/replica-$n.log" >&2; exit 1; }
        sleep 0.05
    done
    echo "replica $n did not answer:" >&2; cat "$work/replica-$n.log" >&2; exit 1
done

# ---- haproxy --------------------------------------------------------------------------
front=$(free_port)
{
    cat <<CFG
defaults
    mode http
    timeout connect 1s
    timeout client 30s
    timeout server 30s
frontend conduit
    bind 127.0.0.1:$front
    default_backend replicas
backend replicas
    balance roundrobin
    option forwardfor
    option httpchk GET /api/tags
    retries 2
    option redispatch 1
    default-server check inter 200ms fall 1 rise 1
CFG
    for n in $(seq "$replicas"); do echo "    server r$n 127.0.0.1:${replica_ports[$((n - 1))]}"; done
} >"$work/haproxy.cfg"
haproxy -f "$work/haproxy.cfg" -db >"$work/haproxy.log" 2>&1 &
pids+=("$!")
for _ in $(seq 1 200); do
    curl -sf -o /dev/null "http://127.0.0.1:$front/api/tags" && break
    sleep 0.05
done
export API_URL="http://127.0.0.1:$front/api"
echo "replicas.sh: $API_URL (haproxy) -> replicas on ${replica_ports[*]}; PostgreSQL on 127.0.0.1:$pg_port; Redis on $redis_port; logs in $work"

# ---- what to do with it ---------------------------------------------------------------
if [ "${1:-}" = --check ]; then
    # A user registered through haproxy logs in on each replica with its token; articles of
    # one title from three users get three slugs; each favorites one: the count is 3 from
    # every replica.
    post() { curl -sf -H 'content-type: application/json' ${3:+-H "authorization: Token $3"} -d "$2" "$API_URL$1"; }
    tokens=()
    for name in ana bo cy; do
        body=$(post /users "{\"user\":{\"username\":\"$name\",\"email\":\"$name@example.com\",\"password\":\"secret-$name\"}}")
        tokens+=("$(python3 -c 'import json, sys; print(json.load(sys.stdin)["user"]["token"])' <<<"$body")")
    done
    for token in "${tokens[@]}"; do
        post /articles '{"article":{"title":"One title","description":"d","body":"b","tagList":["x"]}}' "$token" >/dev/null
    done
    for token in "${tokens[@]}"; do post /articles/one-title/favorite '' "$token" >/dev/null; done
    for port in "${replica_ports[@]}"; do
        for token in "${tokens[@]}"; do
            curl -sf -o /dev/null -H "authorization: Token $token" "http://127.0.0.1:$port/api/user"
        done
        count=$(curl -sf "http://127.0.0.1:$port/api/articles/one-title" | python3 -c 'import json, sys; print(json.load(sys.stdin)["article"]["favoritesCount"])')
        [ "$count" = 3 ] || { echo "replicas.sh: favoritesCount $count on port $port, not 3" >&2; exit 1; }
        slugs=$(curl -sf "http://127.0.0.1:$port/api/articles?tag=x" | python3 -c 'import json, sys; print(" ".join(sorted(a["slug"] for a in json.load(sys.stdin)["articles"])))')
        [ "$slugs" = "one-title one-title-2 one-title-3" ] || { echo "replicas.sh: slugs '$slugs' on port $port" >&2; exit 1; }
    done
    echo "replicas.sh: check passed (tokens valid on every replica, 3 slugs, favoritesCount 3 everywhere)"
elif [ "${1:-}" = --kill ]; then
    # Eight clients for 4 s, each with one request at a time, half reads (GET /api/articles)
    # and half writes (POST a comment); at 1.5 s replica 2 is killed (SIGKILL). The clients'
    # policy: a GET (idempotent) that gets a 502, 503 or 504 or no answer is sent once more; a
    # POST never (it may have been written). Expected: no GET fails, and the POSTs that fail
    # are at most those in flight on the replica when it died (one per client at most).
    [ "$replicas" -ge 2 ] || { echo "replicas.sh: --kill needs two replicas at least" >&2; exit 1; }
    victim=${pids[2]}
    body=$(curl -sf -H 'content-type: application/json' -d '{"user":{"username":"load","email":"load@example.com","password":"secret-load"}}' "$API_URL/users")
    token=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["user"]["token"])' <<<"$body")
    curl -sf -o /dev/null -H 'content-type: application/json' -H "authorization: Token $token" \
        -d '{"article":{"title":"Under load","description":"d","body":"b","tagList":[]}}' "$API_URL/articles"
    API_URL=$API_URL TOKEN=$token VICTIM=$victim python3 - <<'PY'
import json, os, signal, threading, time, urllib.error, urllib.request

api, token, victim = os.environ["API_URL"], os.environ["TOKEN"], int(os.environ["VICTIM"])
lock = threading.Lock()
counts = {"GET": 0, "POST": 0, "GET retried": 0, "GET failed": 0, "POST failed": 0}
statuses = {}

def send(method):
    if method == "GET":
        request = urllib.request.Request(f"{api}/articles?limit=5")
    else:
        request = urllib.request.Request(
            f"{api}/articles/under-load/comments", method="POST",
            data=json.dumps({"comment": {"body": "hi"}}).encode(),
            headers={"content-type": "application/json", "authorization": f"Token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code
    except OSError:
        return None

def client(n, until):
    i = 0
    while time.monotonic() < until:
        method = "GET" if (n + i) % 2 == 0 else "POST"
        i += 1
        status = send(method)
        retried = False
        if method == "GET" and status in (None, 502, 503, 504):
            retried = True
            status = send(method)
        with lock:
            counts[method] += 1
            counts["GET retried"] += retried
            if status != 200:
                counts[f"{method} failed"] += 1
                statuses[f"{method} {status}"] = statuses.get(f"{method} {status}", 0) + 1

start = time.monotonic()
threads = [threading.Thread(target=client, args=(n, start + 4)) for n in range(8)]
for thread in threads:
    thread.start()
time.sleep(1.5)
os.kill(victim, signal.SIGKILL)
for thread in threads:
    thread.join()
print("replicas.sh --kill:", ", ".join(f"{k} {v}" for k, v in counts.items()),
      "; failures by status:", statuses or "none")
assert counts["GET failed"] == 0, counts
assert counts["POST failed"] <= 8, counts
PY
    grep -q "replicas/r2 is DOWN" "$work/haproxy.log" \
        || { echo "replicas.sh: haproxy did not take r2 out:" >&2; cat "$work/haproxy.log" >&2; exit 1; }
    echo "replicas.sh: --kill passed (haproxy took r2 out; no GET failed)"
elif [ "$#" -gt 0 ]; then
    "$@"
else
    echo "replicas.sh: Ctrl-C stops everything"
    wait
fi
