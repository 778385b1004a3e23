# trainyard-agent: takes training jobs from Redis and runs them as containers through the engine
# socket mounted at /var/run/docker.sock. Carries the runtime image's rootfs tarball and imports
# it when the engine lacks trainyard/runtime:<version>.
#
# The engine resolves bind mounts on the HOST, so the data dir must have the same path inside
# this container as on the host (compose.yaml mounts /var/lib/trainyard at /var/lib/trainyard).
#
#   docker build -f docker/agent.Dockerfile -t trainyard/agent:0.1.0 .
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
 && cmake --build /build --target trainyard-agent runtime_image -j"$(nproc)"

FROM debian:12-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libjansson4 libhiredis0.14 libcurl4 libssl3 libarchive13 libpcre2-8-0 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/bin/trainyard-agent /usr/local/bin/trainyard-agent
COPY --from=build /build/runtime-image/trainyard-runtime.tar /usr/share/trainyard/trainyard-runtime.tar
ENV TRAINYARD_DATA_DIR=/var/lib/trainyard \
    TRAINYARD_DOCKER_HOST=unix:///var/run/docker.sock \
    TRAINYARD_RUNTIME_IMAGE_TAR=/usr/share/trainyard/trainyard-runtime.tar
ENTRYPOINT ["/usr/local/bin/trainyard-agent"]
