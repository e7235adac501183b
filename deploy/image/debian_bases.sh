#!/usr/bin/env bash
# Base images for the Dockerfile made from Debian packages, for a machine that can reach
# Debian's archive but no image registry (CI; docs/operations.md, "Image"):
#
#   deploy/image/debian_bases.sh    # prints the Python base, then the Node base
#   podman build --build-arg PYTHON_IMAGE=<first> --build-arg NODE_IMAGE=<second> .
#
# Each base is debootstrap's minimal bookworm plus its packages (bookworm-updates and
# bookworm-security applied), made into an image with `podman import`. The CA certificates
# this machine adds to Debian's (/usr/local/share/ca-certificates) go in too, so a build
# behind a TLS-inspecting proxy can reach PyPI and npm.
#
# Cache: NEWS_IMAGE_CACHE (default /var/cache/news-image-bases, root only) keeps the root
# file systems as tarballs. One is reused only while everything it was made from is the
# same: this script, the package list, the local CA certificates, and the archive's signed
# release files (they change with every package update, security ones included), so a
# cached base is never older than what a fresh debootstrap would give.
set -euo pipefail

suite=bookworm
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
cache=${NEWS_IMAGE_CACHE:-/var/cache/news-image-bases}
declare -A packages=(
  [python]="python3 python3-venv python-is-python3 ca-certificates"
  [node]="nodejs npm ca-certificates"
)

install -d -m 0700 "$cache"
release_state=$(
  for url in "$mirror/dists/$suite/InRelease" "$mirror/dists/$suite-updates/InRelease" \
             "$security/dists/$suite-security/InRelease"; do
    wget -q -O- "$url"
  done | sha256sum | cut -c1-64
)
local_cas=$(cat /usr/local/share/ca-certificates/*.crt 2>/dev/null | sha256sum | cut -c1-64)
minbase=""
cleanup() { if [ -n "$minbase" ]; then rm -rf "$minbase"; fi; }
trap cleanup EXIT

for kind in python node; do
  key=$(printf '%s\n' "$(sha256sum < "$0")" "${packages[$kind]}" "$release_state" "$local_cas" \
        | sha256sum | cut -c1-16)
  image="localhost/news-$kind-base:$suite-$key"
  tarball="$cache/$kind-$suite-$key.tar"
  if ! podman image exists "$image"; then
    if [ ! -f "$tarball" ]; then
      if [ -z "$minbase" ]; then  # one debootstrap serves both bases
        minbase=$(mktemp -d "$cache/.minbase-XXXXXX")
        debootstrap --variant=minbase "$suite" "$minbase" "$mirror" >&2
      fi
      root=$(mktemp -d "$cache/.root-XXXXXX")
      cp -a "$minbase/." "$root/"
      printf '%s\n' "deb $mirror $suite main" "deb $mirror $suite-updates main" \
        "deb $security $suite-security main" > "$root/etc/apt/sources.list"
      mkdir -p "$root/usr/local/share/ca-certificates"
      for ca in /usr/local/share/ca-certificates/*.crt; do
        if [ -f "$ca" ]; then cp "$ca" "$root/usr/local/share/ca-certificates/"; fi
      done
      cp /etc/resolv.conf "$root/etc/resolv.conf"
      chroot "$root" /bin/sh -ec "
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q
        apt-get upgrade -y -q
        apt-get install -y -q --no-install-recommends ${packages[$kind]}
        update-ca-certificates
        apt-get clean
        rm -rf /var/lib/apt/lists/*" >&2
      rm -f "$root/etc/resolv.conf"
      tar -C "$root" -cf "$tarball.tmp" . && mv "$tarball.tmp" "$tarball"
      rm -rf "$root"
      # Older bases of this kind will never match again.
      find "$cache" -maxdepth 1 -name "$kind-$suite-*.tar" ! -name "${tarball##*/}" -delete
    fi
    podman import --quiet "$tarball" "$image" >/dev/null
    # Bases of this kind made from an older key will never be used again.
    podman images --format '{{.Repository}}:{{.Tag}}' "localhost/news-$kind-base" \
      | grep -vxF "$image" | xargs -r podman rmi --force >/dev/null 2>&1 || true
  fi
  echo "$image"
done
