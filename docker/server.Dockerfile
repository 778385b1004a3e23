# trainyard-server: the API (SageMaker, CloudWatch Logs, S3, STS) on one port.
# In compose.yaml it runs API-only (--agents 0) next to Redis and a separate trainyard-agent;
# alone it embeds a private redis-server and an agent (mount the engine socket for that).
#
#   docker build -f docker/server.Dockerfile -t trainyard/server:0.1.0 .
FROM debian:12-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config busybox-static \
      libjansson-dev libmicrohttpd-dev libhiredis-dev libcurl4-openssl-dev libssl-dev \
      libarchive-dev libpcre2-dev libcmocka-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release -DTY_WITH_CUDA=OFF \
 && cmake --build /build --target trainyard-server runtime_image -j"$(nproc)"

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libjansson4 libmicrohttpd12 libhiredis0.14 libcurl4 libssl3 libarchive13 libpcre2-8-0 \
      redis-server ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/trainyard-server /usr/local/bin/trainyard-server
COPY --from=build /build/runtime-image/trainyard-runtime.tar /usr/share/trainyard/trainyard-runtime.tar
ENV TRAINYARD_LISTEN=0.0.0.0:8080 \
    TRAINYARD_DATA_DIR=/var/lib/trainyard \
    TRAINYARD_RUNTIME_IMAGE_TAR=/usr/share/trainyard/trainyard-runtime.tar
VOLUME /var/lib/trainyard
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/trainyard-server"]
