#!/usr/bin/env bash
# Runs the standard QueueBox benchmark suite against the local services and writes
# bench/results/<date>.json and .md, the charts in docs/performance/, and the results section of
# docs/performance.md. Arguments are passed to the bench (try --help, --smoke, --only drain).
#
# The bench is the unpublished module queuebox-bench: its runtime classpath carries adapter-kafka's
# InProcessKafka (its test-jar), so the bench can start a Kafka broker in-process, and the peers it is
# compared with (gruelbox transaction-outbox), which never reach the runnable jar.
set -euo pipefail
cd "$(dirname "$0")/.."
classpath_file=queuebox-bench/target/bench-classpath.txt
if [[ "${BENCH_SKIP_BUILD:-}" != "1" || ! -f "$classpath_file" ]]; then
  ./mvnw -B -q -o -pl queuebox-bench -am package -DskipTests \
    dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$PWD/$classpath_file" \
    || ./mvnw -B -q -pl queuebox-bench -am package -DskipTests \
      dependency:build-classpath -Dmdep.includeScope=runtime -Dmdep.outputFile="$PWD/$classpath_file"
fi
classpath="queuebox-bench/target/classes:$(cat "$classpath_file")"
extra=()
if [[ " $* " != *" --smoke "* ]]; then
  extra=(--charts-dir docs/performance --docs docs/performance.md)
fi
exec java -Xmx2g -XX:+UseG1GC ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.queuebox.bench.BenchCommand "${extra[@]}" "$@"
