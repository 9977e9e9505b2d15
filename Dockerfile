# syntax=docker/dockerfile:1
# Build: docker build -t queuebox .
# Run, configured by environment alone:
#   docker run -e QUEUEBOX_DATABASE_URL=jdbc:postgresql://db:5432/app -e QUEUEBOX_BROKER_TYPE=kafka \
#              -e QUEUEBOX_BROKER_KAFKA_BOOTSTRAP_SERVERS=kafka:9092 -v queuebox-capture:/var/lib/queuebox/capture queuebox
# or with a file: -v $PWD/queuebox.yaml:/etc/queuebox/queuebox.yaml (read when present; the environment wins).

FROM maven:3.9.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
# The Maven repository is a cache mount: dependencies are downloaded once and reused by later builds even
# when the sources change. Only the production jar is built: no demo, no bench.
RUN --mount=type=cache,target=/root/.m2 ./mvnw -B -q package -DskipTests -pl queuebox-bootstrap -am

FROM eclipse-temurin:17-jre
# curl serves the health check only.
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system queuebox \
 && useradd --system --gid queuebox --home-dir /var/lib/queuebox --shell /usr/sbin/nologin queuebox \
 && mkdir -p /var/lib/queuebox/capture /etc/queuebox /opt/queuebox/plugins \
 && chown -R queuebox:queuebox /var/lib/queuebox
COPY --from=build /src/queuebox-bootstrap/target/queuebox.jar /opt/queuebox/queuebox.jar
# Custom broker adapters: every jar in /opt/queuebox/plugins joins the class path (COPY it in a derived image
# or mount the folder); see docs/how-to/custom-broker-adapter.md.
# An empty named volume mounted here inherits the queuebox user's ownership; a bind mount keeps the host's.
VOLUME ["/var/lib/queuebox/capture"]
USER queuebox
# The working directory is where the optional default file ./queuebox.yaml is looked for.
WORKDIR /etc/queuebox
ENV QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY=/var/lib/queuebox/capture
# The port of /health/ready and /metrics. The health check reads this variable, and the environment wins over
# a file, so set the port here (docker run -e QUEUEBOX_HTTP_PORT=9090) rather than as http.port in the file.
ENV QUEUEBOX_HTTP_PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS "http://127.0.0.1:${QUEUEBOX_HTTP_PORT}/health/ready" || exit 1
ENTRYPOINT ["java", "-XX:MaxRAMPercentage=75", "-jar", "/opt/queuebox/queuebox.jar"]
# No --config: ./queuebox.yaml is read when it exists, so environment-only configuration works.
CMD ["run"]
