#!/usr/bin/env bash
# What the insert notification (V4__queuebox_insert_notify.sql, as V5 recreates it) costs on the insert ceiling
# (issue 14).
#
# PostgreSQL serialises the commits of transactions that NOTIFY (a lock taken just before the commit record and
# held until after its flush), so the cost shows where commits are the bottleneck: many small transactions.
# Three outbox tables in a database of their own: qb_poll (V1-V3: no trigger), qb_notify (V1-V5: the trigger that
# names its rows) and qb_notify4 (V1-V4: the trigger of version 4, an empty payload). pgbench
# drives one-row transactions (a plain INSERT, aggregates drawn from 1,000,000) from N clients on N threads;
# variants, interleaved, medians reported:
#   poll            qb_poll: no trigger
#   disabled        qb_notify with the trigger disabled, as V4 creates it (outbox.wake.mode poll)
#   notify          qb_notify with the trigger enabled, nobody listening (PostgreSQL queues the notification anyway)
#   notify+listener the same with a pgjdbc session that LISTENs and consumes, as the relay does
#   notify-v4       qb_notify4 with version 4's trigger enabled, nobody listening
#
# Usage: bench/notify-cost.sh [--seconds N] [--reps N] [--clients N] [--rows N]
# --rows: rows per transaction (one INSERT ... SELECT; default 1)
# Needs PostgreSQL on 127.0.0.1:5432 as postgres (trust), pgbench, psql, java and the pgjdbc jar in ~/.m2.
# Creates and drops the database queuebox_bench_notify. Changes no server setting.
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=15
REPS=3
CLIENTS=8
ROWS=1
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

HOST=127.0.0.1
DB=queuebox_bench_notify
PSQL=(psql -h "$HOST" -U postgres -X -q -v ON_ERROR_STOP=1)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" >/dev/null 2>&1 || true' EXIT
STAMP=$(date -u +%Y-%m-%dT%H-%MZ)
OUT=bench/results/notify-cost-$STAMP.md
SCRIPTS=adapter-postgres/src/main/resources/db/queuebox/postgres
PGJDBC=$(ls ~/.m2/repository/org/postgresql/postgresql/*/postgresql-*.jar | grep -v sources | sort -V | tail -n 1)

render() { # script schema
  sed -e "s/\${queuebox_schema}/$2/g" -e "s/\${queuebox_table}/queuebox_outbox/g" "$SCRIPTS/$1"
}

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
PG=("${PSQL[@]}" -d "$DB")
for script in V1__queuebox_outbox.sql V2__queuebox_aggregate_order.sql V3__queuebox_lease_token_index.sql; do
  render $script qb_poll | "${PG[@]}"
  render $script qb_notify | "${PG[@]}"
  render $script qb_notify4 | "${PG[@]}"
done
render V4__queuebox_insert_notify.sql qb_notify | "${PG[@]}"
render V5__queuebox_insert_notify_names_rows.sql qb_notify | "${PG[@]}"
render V4__queuebox_insert_notify.sql qb_notify4 | "${PG[@]}"

# A 216-byte JSON payload, as in the other benches.
PAYLOAD=$(python3 -c 'import json
p = json.dumps({"orderId": "x" * 40, "customer": "c" * 60, "lines": [{"sku": "s" * 20, "qty": 1}] * 2})
print(chr(92) + "x" + (p + " " * 216)[:216].encode().hex())')
for schema in qb_poll qb_notify qb_notify4; do
  cat > "$WORK/$schema.sql" <<SQL
\\set a random(1, 1000000)
INSERT INTO $schema.queuebox_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
SELECT gen_random_uuid(), 'order', 'order-' || (:a + g), 'OrderPlaced', '$PAYLOAD' FROM generate_series(1, $ROWS) g;
SQL
done

# The listener: LISTEN, then getNotifications(500 ms) until the time is up; prints how many it received.
cat > "$WORK/Listen.java" <<'JAVA'
import java.sql.*;
public class Listen {
    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + Long.parseLong(args[1]) * 1_000_000_000L;
        long count = 0;
        try (Connection c = DriverManager.getConnection(args[0])) {
            c.createStatement().execute("LISTEN \"qb_notify.queuebox_outbox\"");
            org.postgresql.PGConnection pg = c.unwrap(org.postgresql.PGConnection.class);
            while (System.nanoTime() < end) {
                org.postgresql.PGNotification[] got = pg.getNotifications(500);
                if (got != null) count += got.length;
            }
        }
        System.out.println(count);
    }
}
JAVA

setting() { "${PG[@]}" -At -c "SHOW $1"; }
{
  echo "# Insert notification (V5, and V4 beside it): cost on the insert ceiling, $STAMP"
  echo
  echo "| machine | |"
  echo "| --- | --- |"
  echo "| cores | $(nproc) |"
  echo "| load average at start | $(cut -d' ' -f1-3 /proc/loadavg) |"
  echo "| PostgreSQL | $("${PG[@]}" -At -c "SELECT current_setting('server_version')") |"
  for s in autovacuum synchronous_commit fsync wal_sync_method commit_delay shared_buffers max_connections; do
    echo "| $s | $(setting $s) |"
  done
  echo "| runs | ${SECONDS_PER_RUN} s each, $REPS per variant, interleaved; $CLIENTS clients on $CLIENTS threads, pgbench -M prepared, $ROWS-row transactions (one INSERT ... SELECT) |"
  echo
} > "$OUT"

declare -A TPS
declare -A HEARD
run() { # variant
  local schema=qb_poll listener=""
  [[ $1 == notify* ]] && schema=qb_notify && "${PG[@]}" -c "ALTER TABLE qb_notify.queuebox_outbox ENABLE TRIGGER queuebox_outbox_notify_rows"
  [[ $1 == notify-v4 ]] && schema=qb_notify4 && "${PG[@]}" -c "ALTER TABLE qb_notify4.queuebox_outbox ENABLE TRIGGER queuebox_outbox_notify"
  [[ $1 == disabled ]] && schema=qb_notify && "${PG[@]}" -c "ALTER TABLE qb_notify.queuebox_outbox DISABLE TRIGGER queuebox_outbox_notify_rows"
  "${PG[@]}" -c "TRUNCATE $schema.queuebox_outbox"
  if [[ $1 == notify+listener ]]; then
    java -cp "$PGJDBC" "$WORK/Listen.java" "jdbc:postgresql://$HOST:5432/$DB?user=postgres" $((SECONDS_PER_RUN + 3)) > "$WORK/heard" &
    listener=$!
    sleep 2
  fi
  local out
  out=$(pgbench -h "$HOST" -U postgres -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECONDS_PER_RUN" \
    -f "$WORK/$schema.sql" "$DB" 2>&1) || { echo "$out" >&2; exit 1; }
  local tps tx
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
  tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
  tps=$(printf '%.0f' "$tps")
  TPS[$1]="${TPS[$1]:-} $tps"
  if [[ -n $listener ]]; then
    wait $listener
    HEARD[$1]="${HEARD[$1]:-} $(cat "$WORK/heard")/$tx"
  fi
  echo "  $1: $tps tx/s" >&2
}

echo "throughput: $REPS x ${SECONDS_PER_RUN}s per variant" >&2
VARIANTS=(poll disabled notify notify+listener notify-v4)
for rep in $(seq 1 "$REPS"); do
  if (( rep % 2 )); then order=("${VARIANTS[@]}"); else order=(notify-v4 notify+listener notify disabled poll); fi
  for variant in "${order[@]}"; do run "$variant"; done
done

median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.0f}')" $1; }
{
  echo "## Insert ceiling, $ROWS-row transactions (medians; every run in brackets)"
  echo
  echo "| variant | tx/s | ÷ poll |"
  echo "| --- | ---: | ---: |"
  p=$(median "${TPS[poll]}")
  for variant in "${VARIANTS[@]}"; do
    m=$(median "${TPS[$variant]}")
    echo "| $variant | $m [${TPS[$variant]# }] | $(python3 -c "print(f'{$m/$p*100:.0f} %')") |"
  done
  echo
  echo "Notifications the listener received / transactions committed, per run: ${HEARD[notify+listener]# }"
  echo
} >> "$OUT"
cat "$OUT"
