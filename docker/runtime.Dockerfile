# trainyard/runtime:<version> - the training image, for hosts with Docker and a registry.
# The same layout as the offline build (runtime-image/build-rootfs.sh, imported by the agent):
# busybox, /usr/bin/trainyard-train (+ /usr/bin/train), /etc/passwd, /etc/group, /tmp, /opt/ml.
#
#   docker build -f docker/runtime.Dockerfile -t trainyard/runtime:0.1.0 .
#   docker run --rm -v /path/to/ml:/opt/ml trainyard/runtime:0.1.0 train
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
 && cmake --build /build --target runtime_image -j"$(nproc)" \
 && mkdir /rootfs \
 && tar -C /rootfs -xpf /build/runtime-image/trainyard-runtime.tar

FROM scratch
COPY --from=build /rootfs/ /
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /
CMD ["train"]
