# syntax=docker/dockerfile:1
# Build: docker build -t queuebox .
# Run:   docker run -v queuebox-capture:/var/lib/queuebox/capture -v $PWD/queuebox.yaml:/etc/queuebox/queuebox.yaml queuebox

FROM maven:3.9.9-eclipse-temurin-17 AS build
WORKDIR /src
COPY . .
RUN ./mvnw -B -q package -DskipTests -pl queuebox-bootstrap -am

FROM eclipse-temurin:17-jre
# curl serves the health check only.
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system queuebox \
 && useradd --system --gid queuebox --home-dir /var/lib/queuebox --shell /usr/sbin/nologin queuebox \
 && mkdir -p /var/lib/queuebox/capture /etc/queuebox \
 && chown -R queuebox:queuebox /var/lib/queuebox
COPY --from=build /src/queuebox-bootstrap/target/queuebox.jar /opt/queuebox/queuebox.jar
# An empty named volume mounted here inherits the queuebox user's ownership; a bind mount keeps the host's.
VOLUME ["/var/lib/queuebox/capture"]
USER queuebox
WORKDIR /var/lib/queuebox
ENV QUEUEBOX_OUTBOX_CAPTURE_STATE_DIRECTORY=/var/lib/queuebox/capture
EXPOSE 8080
HEALTHCHECK --interval=15s --timeout=3s --start-period=30s --retries=3 \
  CMD curl -fsS http://127.0.0.1:8080/health/ready || exit 1
ENTRYPOINT ["java", "-XX:MaxRAMPercentage=75", "-jar", "/opt/queuebox/queuebox.jar"]
CMD ["run", "--config", "/etc/queuebox/queuebox.yaml"]
