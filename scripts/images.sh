#!/usr/bin/env bash
# Builds the server images the container tests use, from Debian packages only.
#
# This machine kind has no container registry, so `docker pull` fails. We
# debootstrap a Debian bookworm minbase rootfs with the server packages,
# `docker import` it once as a base image, and derive one small image per
# server whose default command matches the official image's (redis-server,
# etcd, zkServer.sh, postgres; pgbouncer has no official image), so the testbed's code path is the same with
# the official images (DISTLOCK_*_IMAGE overrides; see testbed/images.go).
#
# Idempotent: an image whose recipe label matches this script's hash is kept.
# Usage: scripts/images.sh            build what is missing
#        FORCE=1 scripts/images.sh    rebuild everything
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
recipe=$(sha256sum "$0" | cut -c1-12)
base=distlock/servers:bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
packages=redis-server,postgresql-15,pgbouncer,etcd-server,zookeeper,procps,faketime,iproute2,iptables

label_of() { docker image inspect -f '{{index .Config.Labels "distlock.recipe"}}' "$1" 2>/dev/null || true; }
up_to_date() { [ -z "${FORCE:-}" ] && [ "$(label_of "$1")" = "$recipe" ]; }

if ! up_to_date "$base"; then
  if ! command -v debootstrap >/dev/null; then
    echo "images: installing debootstrap" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
  fi
  work=$(mktemp -d /var/tmp/distlock-rootfs.XXXXXX)
  trap 'rm -rf "$work"' EXIT
  echo "images: debootstrap bookworm ($packages), about 2 minutes" >&2
  debootstrap --variant=minbase --include="$packages" bookworm "$work/root" "$mirror" >"$work/log" 2>&1 \
    || { tail -n 30 "$work/log" >&2; exit 1; }
  # Keep the image lean and neutral: no apt lists, no docs, no services started.
  rm -rf "$work"/root/var/lib/apt/lists/* "$work"/root/usr/share/doc/* "$work"/root/usr/share/man/*
  echo "images: docker import $base" >&2
  tar -C "$work/root" -c . | docker import \
    --change "LABEL distlock.recipe=$recipe" \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    - "$base" >/dev/null
  rm -rf "$work"; trap - EXIT
fi

# derive NAME DOCKERFILE-BODY: a thin image over the base with the official image's command.
derive() {
  local name=$1 body=$2
  up_to_date "$name" && return 0
  echo "images: build $name" >&2
  printf 'FROM %s\nLABEL distlock.recipe=%s\n%s\n' "$base" "$recipe" "$body" |
    DOCKER_BUILDKIT=0 docker build -q -t "$name" - >/dev/null
}

# redis:7.0 official: CMD ["redis-server"]. Debian's binary is the same 7.0 series.
derive distlock/redis:7.0-bookworm 'EXPOSE 6379
CMD ["redis-server"]'

# postgres:15 official: runs "postgres" as user postgres with POSTGRES_PASSWORD; ours
# initialises a trust-auth cluster on first start with the same env contract.
derive distlock/postgres:15-bookworm 'ENV PGDATA=/var/lib/postgresql/data PATH=/usr/lib/postgresql/15/bin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN printf "%s\n" "#!/bin/sh" "set -e" "mkdir -p \$PGDATA && chown postgres \$PGDATA" \
  "if [ ! -s \$PGDATA/PG_VERSION ]; then su postgres -c \"initdb -A trust -U \${POSTGRES_USER:-postgres} -D \$PGDATA\" >/dev/null; fi" \
  "exec su postgres -c \"exec \$*\"" > /usr/local/bin/docker-entrypoint.sh && chmod +x /usr/local/bin/docker-entrypoint.sh
EXPOSE 5432
ENTRYPOINT ["docker-entrypoint.sh"]
CMD ["postgres", "-c", "listen_addresses=*"]'

# PgBouncer (no official image): runs as postgres with the config file the testbed
# copies in (testbed/pgbouncer.go writes /etc/pgbouncer/distlock.ini and its userlist).
derive distlock/pgbouncer:1.18-bookworm 'EXPOSE 6432
USER postgres
CMD ["pgbouncer", "/etc/pgbouncer/distlock.ini"]'

# quay.io/coreos/etcd official: the etcd binary with flags.
derive distlock/etcd:3.4-bookworm 'EXPOSE 2379 2380
CMD ["etcd"]'

# zookeeper:3.8 official: zkServer.sh start-foreground.
derive distlock/zookeeper:3.8-bookworm 'ENV ZOOCFGDIR=/etc/zookeeper/conf
EXPOSE 2181 2888 3888
CMD ["/usr/share/zookeeper/bin/zkServer.sh", "start-foreground"]'

echo "images: ready" >&2
