#!/usr/bin/env bash
# The fault-injection suite (docs/reliability.md): builds the runnable jar, then runs the scenarios against
# it as separate processes, with the local PostgreSQL and RabbitMQ and an in-process Kafka broker.
#   reliability/run.sh               the short form (CI runs it from .ci/run)
#   reliability/run.sh --long        the long form (50 kills over 100,000 events, 60 s outages, 30 s cuts)
#   reliability/run.sh --only kill-9,poison-kafka    some scenarios; --help lists them
# Exits 1 when any scenario lost, invented or reordered an event.
set -euo pipefail
cd "$(dirname "$0")/.."
classpath_file=queuebox-reliability/target/suite-classpath.txt
if [[ "${RELIABILITY_SKIP_BUILD:-}" != "1" || ! -f "$classpath_file" || ! -f queuebox-bootstrap/target/queuebox.jar ]]; then
  build=(-B -q -pl queuebox-reliability -am package -DskipTests dependency:build-classpath
    -Dmdep.outputFile="$PWD/$classpath_file" -Dmdep.excludeArtifactIds=queuebox-bootstrap)
  ./mvnw -o "${build[@]}" || ./mvnw "${build[@]}"
fi
exec java -Xmx1g ${RELIABILITY_JAVA_OPTS:-} -cp "queuebox-reliability/target/classes:$(cat "$classpath_file")" \
  io.queuebox.reliability.FaultSuite "$@"
