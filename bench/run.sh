#!/usr/bin/env bash
# Runs the standard QueueBox benchmark suite against the local services and writes
# bench/results/<date>.json and .md, the charts in docs/performance/, and the results section of
# docs/performance.md. Arguments are passed to `queuebox bench` (try --help, --smoke, --only drain).
#
# The bench runs from the Maven test classpath of queuebox-bootstrap rather than from the shaded jar:
# that classpath carries adapter-kafka's InProcessKafka (its test-jar), so the bench can start a Kafka
# broker in-process. From the jar, `java -jar queuebox.jar bench --kafka-bootstrap host:port` (or
# --no-kafka) works.
set -euo pipefail
cd "$(dirname "$0")/.."
classpath_file=queuebox-bootstrap/target/bench-classpath.txt
if [[ "${BENCH_SKIP_BUILD:-}" != "1" || ! -f "$classpath_file" ]]; then
  ./mvnw -B -q -o -pl queuebox-bootstrap -am package -DskipTests \
    dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$PWD/$classpath_file" \
    || ./mvnw -B -q -pl queuebox-bootstrap -am package -DskipTests \
      dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$PWD/$classpath_file"
fi
classpath="queuebox-bootstrap/target/classes:$(cat "$classpath_file")"
extra=()
if [[ " $* " != *" --smoke "* ]]; then
  extra=(--charts-dir docs/performance --docs docs/performance.md)
fi
exec java -Xmx2g -XX:+UseG1GC ${BENCH_JAVA_OPTS:-} -cp "$classpath" io.queuebox.bootstrap.bench.BenchCommand "${extra[@]}" "$@"
