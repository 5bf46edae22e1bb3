# The slotcron daemon in a container: built with the Rust image, run (the glibc binary)
# on Debian bookworm-slim. Not built by CI (its machine has no Docker engine).
#   docker build -t slotcron .
#   docker run --rm -v "$PWD/examples/jobs.toml:/etc/slotcron/jobs.toml:ro" \
#       -v slotcron-state:/var/lib/slotcron slotcron
# Stop it with `docker stop --time 30` (Docker's default 10 s is shorter than the
# shutdown timeout, 20 s, plus the 5 s grace before SIGKILL).

FROM rust:1.95-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked -p slotcron-cli

FROM debian:bookworm-slim
# tini as PID 1: it reaps what the jobs leave in the background and passes SIGTERM on
# to slotcron alone, which then lets running commands finish.
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tini \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --home-dir /var/lib/slotcron slotcron
COPY --from=build /src/target/release/slotcron /usr/local/bin/slotcron
USER slotcron
WORKDIR /var/lib/slotcron
VOLUME /var/lib/slotcron
ENV RUST_LOG=info
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/slotcron"]
CMD ["run", "/etc/slotcron/jobs.toml", "--state", "sqlite:/var/lib/slotcron/slotcron.db"]
