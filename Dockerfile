# Multi-stage build of the three binaries: cmp-api, cmp-worker and gateway-sim.
FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --bins \
 && mkdir /out \
 && cp target/release/cmp-api target/release/cmp-worker target/release/gateway-sim /out/

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 cmp
COPY --from=build /out/ /usr/local/bin/
USER cmp
EXPOSE 8080 9090 7070
CMD ["cmp-api", "serve"]
