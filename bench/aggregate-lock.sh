#!/usr/bin/env bash
# What the per-aggregate write lock of V2__queuebox_aggregate_order.sql costs on PostgreSQL (issue 11).
#
# Two outbox tables in a database of their own: qb_before (V1 only, the writer's statement before the
# change) and qb_after (V1 + V2, the writer's statement with its sorted pre-lock). pgbench drives both,
# runs interleaved (before, after, before, after, ...), medians reported:
#   single-distinct  1 row per transaction, 8 clients, aggregates drawn from 1,000,000
#   single-hot       1 row per transaction, 8 clients, every row of the same aggregate
#   batch-distinct   100 rows per transaction (the writer's multi-row statement), 8 clients, 100 aggregates each
#   batch-hot        100 rows per transaction, 8 clients, every row of the same aggregate
#   batch-distinct-plain  (after only) a plain INSERT ... SELECT of 100 rows: the trigger without the pre-lock
# then latency while one writer keeps aggregate "order-long" locked for 2 s per transaction, for writers of
# that aggregate and of other aggregates, before and after; then how many distinct aggregates one
# transaction can write before the lock table is full.
#
# The writer's statement is reproduced in SQL with generate_series instead of bound arrays; the lock
# part is the same text as EventWriter's.
#
# Usage: bench/aggregate-lock.sh [--seconds N] [--reps N] [--clients N]
# Needs PostgreSQL on 127.0.0.1:5432 as postgres (trust), pgbench and psql. Creates and drops the database
# queuebox_bench_aggregate_lock. Changes no server setting: it prints autovacuum and the other settings
# that matter (this machine runs with autovacuum off; the tables here only receive inserts and are
# truncated before each run, so no vacuum debt builds up).
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_RUN=10
REPS=3
CLIENTS=8
while [[ $# -gt 0 ]]; do
  case "$1" in
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --reps) REPS="$2"; shift 2 ;;
    --clients) CLIENTS="$2"; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

HOST=127.0.0.1
DB=queuebox_bench_aggregate_lock
PSQL=(psql -h "$HOST" -U postgres -X -q -v ON_ERROR_STOP=1)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"; "${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" >/dev/null 2>&1 || true' EXIT
STAMP=$(date -u +%Y-%m-%dT%H-%MZ)
OUT=bench/results/aggregate-lock-$STAMP.md
SCRIPTS=adapter-postgres/src/main/resources/db/queuebox/postgres

render() { # script schema
  sed -e "s/\${queuebox_schema}/$2/g" -e "s/\${queuebox_table}/queuebox_outbox/g" "$SCRIPTS/$1"
}

"${PSQL[@]}" -d postgres -c "DROP DATABASE IF EXISTS $DB" -c "CREATE DATABASE $DB"
PG=("${PSQL[@]}" -d "$DB")
render V1__queuebox_outbox.sql qb_before | "${PG[@]}"
render V1__queuebox_outbox.sql qb_after | "${PG[@]}"
render V2__queuebox_aggregate_order.sql qb_after | "${PG[@]}"

# A 216-byte JSON payload, as in the main bench.
PAYLOAD=$(python3 -c 'import json
p = json.dumps({"orderId": "x" * 40, "customer": "c" * 60, "lines": [{"sku": "s" * 20, "qty": 1}] * 2})
print(chr(92) + "x" + (p + " " * 216)[:216].encode().hex())')
COLUMNS="event_id, aggregate_type, aggregate_id, event_type, destination, payload, content_type, headers"

single() { # schema aggregate-expression
  cat <<EOF
\\set a random(1, 1000000)
INSERT INTO $1.queuebox_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
VALUES (gen_random_uuid(), 'order', $2, 'OrderPlaced', '$PAYLOAD');
EOF
}

rows() { # aggregate-expression: the 100 rows of one batch, as the writer's unnest gives them
  echo "SELECT gen_random_uuid() AS event_id, 'order'::text AS aggregate_type, $1 AS aggregate_id,"
  echo " 'OrderPlaced'::text AS event_type, NULL::text AS destination, '$PAYLOAD'::bytea AS payload,"
  echo " 'application/json'::text AS content_type, '{}'::text AS headers, g AS position FROM generate_series(1, 100) g"
}

batch_before() { # the writer's statement before the change
  echo "INSERT INTO qb_before.queuebox_outbox ($COLUMNS)"
  echo "SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.event_type, e.destination, e.payload, e.content_type, e.headers::jsonb"
  echo "FROM ($(rows "$1")) e ORDER BY e.position;"
}

batch_after() { # the writer's statement now: the batch's locks in key order, then the rows in list order
  echo "WITH e AS MATERIALIZED ($(rows "$1")),"
  echo " keys AS MATERIALIZED (SELECT DISTINCT hashtext(length(e.aggregate_type)::text || ':' || e.aggregate_type || ':' || e.aggregate_id) AS lock_key FROM e ORDER BY 1),"
  echo " locked AS MATERIALIZED (SELECT count(pg_advisory_xact_lock('qb_after.queuebox_outbox'::regclass::oid::integer, k.lock_key)::text) AS aggregates FROM keys k)"
  echo "INSERT INTO qb_after.queuebox_outbox ($COLUMNS)"
  echo "SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.event_type, e.destination, e.payload, e.content_type, e.headers::jsonb"
  echo "FROM e CROSS JOIN locked ORDER BY e.position;"
}

batch_plain() { # an application's own multi-row INSERT on the table with the trigger
  echo "INSERT INTO qb_after.queuebox_outbox ($COLUMNS)"
  echo "SELECT e.event_id, e.aggregate_type, e.aggregate_id, e.event_type, e.destination, e.payload, e.content_type, e.headers::jsonb"
  echo "FROM ($(rows "$1")) e ORDER BY e.position;"
}

DISTINCT_ONE="'order-' || :a"
DISTINCT_MANY="'order-' || (random() * 1000000)::int"
HOT="'order-hot'"
single qb_before "$DISTINCT_ONE" > "$WORK/single-distinct.before.sql"
single qb_after "$DISTINCT_ONE" > "$WORK/single-distinct.after.sql"
single qb_before "$HOT" > "$WORK/single-hot.before.sql"
single qb_after "$HOT" > "$WORK/single-hot.after.sql"
batch_before "$DISTINCT_MANY" > "$WORK/batch-distinct.before.sql"
batch_after "$DISTINCT_MANY" > "$WORK/batch-distinct.after.sql"
batch_plain "$DISTINCT_MANY" > "$WORK/batch-distinct-plain.after.sql"
batch_before "$HOT" > "$WORK/batch-hot.before.sql"
batch_after "$HOT" > "$WORK/batch-hot.after.sql"

setting() { "${PG[@]}" -At -c "SHOW $1"; }
{
  echo "# Per-aggregate write lock (V2): cost on inserts, $STAMP"
  echo
  echo "| machine | |"
  echo "| --- | --- |"
  echo "| cores | $(nproc) |"
  echo "| load average at start | $(cut -d' ' -f1-3 /proc/loadavg) |"
  echo "| PostgreSQL | $("${PG[@]}" -At -c "SELECT current_setting('server_version')") |"
  for s in autovacuum synchronous_commit fsync shared_buffers max_connections max_locks_per_transaction deadlock_timeout; do
    echo "| $s | $(setting $s) |"
  done
  echo "| runs | ${SECONDS_PER_RUN} s each, $REPS per variant, interleaved; $CLIENTS clients, pgbench -M prepared |"
  echo
} > "$OUT"

declare -A TPS
run() { # workload variant
  local schema=qb_${2}
  "${PG[@]}" -c "TRUNCATE $schema.queuebox_outbox"
  local out
  out=$(pgbench -h "$HOST" -U postgres -n -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" \
    -f "$WORK/$1.$2.sql" "$DB" 2>&1) || { echo "$out" >&2; exit 1; }
  local tps failed
  tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p' <<<"$out")
  failed=$(sed -n 's/^number of failed transactions: \([0-9]*\).*/\1/p' <<<"$out")
  tps=$(printf '%.0f' "$tps")
  TPS[$1.$2]="${TPS[$1.$2]:-} $tps"
  echo "  $1 $2: $tps tx/s (failed: ${failed:-0})" >&2
}

echo "throughput: $REPS x ${SECONDS_PER_RUN}s per variant" >&2
for rep in $(seq 1 "$REPS"); do
  for workload in single-distinct single-hot batch-distinct batch-hot; do
    if (( rep % 2 )); then run $workload before; run $workload after; else run $workload after; run $workload before; fi
  done
  run batch-distinct-plain after
done

median() { python3 -c "import statistics,sys; v=[float(x) for x in sys.argv[1:]]; print(f'{statistics.median(v):.0f}')" $1; }
rows_of() { case "$1" in single-*) echo 1 ;; *) echo 100 ;; esac; }
{
  echo "## Insert ceiling (medians; every run in brackets)"
  echo
  echo "| workload | rows/tx | before: tx/s | after: tx/s | before: rows/s | after: rows/s | after ÷ before |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"
  for workload in single-distinct single-hot batch-distinct batch-hot; do
    n=$(rows_of $workload)
    b=$(median "${TPS[$workload.before]}"); a=$(median "${TPS[$workload.after]}")
    echo "| $workload | $n | $b [${TPS[$workload.before]# }] | $a [${TPS[$workload.after]# }] | $((b * n)) | $((a * n)) | $(python3 -c "print(f'{$a/$b*100:.0f} %')") |"
  done
  p=$(median "${TPS[batch-distinct-plain.after]}")
  echo "| batch-distinct, plain INSERT (trigger only) | 100 | – | $p [${TPS[batch-distinct-plain.after]# }] | – | $((p * 100)) | – |"
  echo
} >> "$OUT"

# ---------------------------------------------------------------- latency under a long writer transaction
latency() { # variant workload-name aggregate-expression
  local schema=qb_$1
  "${PG[@]}" -c "TRUNCATE $schema.queuebox_outbox"
  single "$schema" "$3" > "$WORK/lat.sql"
  # One writer that keeps order-long in an open transaction for 2 s, again and again.
  ( end=$((SECONDS + SECONDS_PER_RUN + 2))
    while (( SECONDS < end )); do
      "${PG[@]}" -c "BEGIN; INSERT INTO $schema.queuebox_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
        VALUES (gen_random_uuid(), 'order', 'order-long', 'OrderPlaced', '$PAYLOAD'); SELECT pg_sleep(2); COMMIT;" >/dev/null
    done ) &
  local long=$!
  sleep 0.5
  rm -f "$WORK"/lat.log*
  pgbench -h "$HOST" -U postgres -n -M prepared -c 4 -j 2 -T "$SECONDS_PER_RUN" -l --log-prefix="$WORK/lat.log" \
    -f "$WORK/lat.sql" "$DB" >/dev/null 2>&1
  wait $long
  cat "$WORK"/lat.log* | python3 -c "
import sys, statistics
v = sorted(int(l.split()[2]) / 1000 for l in sys.stdin if l.strip())
q = lambda p: v[min(len(v) - 1, int(p * len(v)))]
print(f'| $2 | $1 | {len(v)} | {q(0.5):.1f} | {q(0.99):.1f} | {v[-1]:.0f} |')"
}
{
  echo "## Latency while one transaction holds aggregate order-long open for 2 s (4 clients, 1 row/tx, ${SECONDS_PER_RUN} s)"
  echo
  echo "| writers of | variant | transactions | p50 ms | p99 ms | max ms |"
  echo "| --- | --- | ---: | ---: | ---: | ---: |"
  for variant in before after; do
    latency $variant "the same aggregate (order-long)" "'order-long'"
    latency $variant "other aggregates" "$DISTINCT_ONE"
  done
  echo
} >> "$OUT"

# ---------------------------------------------------------------- the lock table
{
  echo "## Distinct aggregates in one transaction (plain INSERT ... SELECT into qb_after)"
  echo
  echo "| aggregates | result |"
  echo "| ---: | --- |"
  for n in 1000 4000 8000 12000 16000; do
    if msg=$("${PG[@]}" -c "BEGIN; INSERT INTO qb_after.queuebox_outbox (event_id, aggregate_type, aggregate_id, event_type, payload)
        SELECT gen_random_uuid(), 'order', 'bulk-' || g, 'OrderPlaced', '\\x7b7d' FROM generate_series(1, $n) g; ROLLBACK;" 2>&1); then
      echo "| $n | ok |"
    else
      echo "| $n | $(grep -o 'ERROR: .*' <<<"$msg" | head -1) |"
    fi
  done
  echo
} >> "$OUT"

cat "$OUT"
echo "written to $OUT" >&2
