#!/usr/bin/env bash
# Makes a stand-in for the registry image debian:bookworm-slim where no
# registry can be reached but Debian's package archive can: a
# `debootstrap --variant=minbase bookworm` tree, imported into the container
# engine under that name. The tree is cached as a tarball, so a second run
# only imports it.
#
#   docker/debian-base.sh ENGINE CACHE_DIR [IMAGE_NAME]
#     ENGINE      docker or podman
#     CACHE_DIR   where bookworm-minbase.tar is kept (created)
#     IMAGE_NAME  default debian:bookworm-slim
#
# Needs root (debootstrap; apt-get installs it when missing). Exit status 0
# when the image exists afterwards, 1 otherwise, with the reason on stderr.
set -euo pipefail
engine=${1:?usage: debian-base.sh ENGINE CACHE_DIR [IMAGE_NAME]}
cache=${2:?usage: debian-base.sh ENGINE CACHE_DIR [IMAGE_NAME]}
name=${3:-debian:bookworm-slim}
tarball=$cache/bookworm-minbase.tar

say() { echo "debian-base: $*" >&2; }

if "$engine" image exists "$name" 2>/dev/null ||
	{ [ "$engine" = docker ] && docker image inspect "$name" >/dev/null 2>&1; }; then
	say "image $name already present"
	exit 0
fi
mkdir -p "$cache"
if [ ! -s "$tarball" ]; then
	[ "$(id -u)" = 0 ] || { say "debootstrap needs root"; exit 1; }
	if ! command -v debootstrap >/dev/null; then
		say "installing debootstrap"
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends debootstrap >/dev/null || { say "cannot install debootstrap"; exit 1; }
	fi
	root=$(mktemp -d "$cache/rootfs.XXXXXX")
	trap 'rm -rf "$root" "$tarball.tmp"' EXIT
	say "debootstrap --variant=minbase bookworm (about a minute)"
	if ! debootstrap --variant=minbase bookworm "$root" >"$cache/debootstrap.log" 2>&1; then
		say "debootstrap failed; last lines of $cache/debootstrap.log:"
		tail -n 5 "$cache/debootstrap.log" >&2
		exit 1
	fi
	# Like the registry's slim image: no package lists, no apt caches.
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*
	tar -C "$root" -cf "$tarball.tmp" .
	mv "$tarball.tmp" "$tarball"
fi
say "importing $tarball as $name"
if ! "$engine" import --change 'CMD ["bash"]' "$tarball" "$name" >"$cache/import.log" 2>&1; then
	say "$engine import failed: $(tail -n 3 "$cache/import.log" | tr '\n' ' ')"
	exit 1
fi
