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
# Needs root, or sudo (debootstrap; apt-get installs it when missing); the
# engine runs as the caller. Exit status 0 when the image exists
# afterwards, 1 otherwise, with the reason on stderr.
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
	SUDO=
	if [ "$(id -u)" != 0 ]; then
		command -v sudo >/dev/null || { say "debootstrap needs root or sudo"; exit 1; }
		SUDO=sudo
	fi
	if ! command -v debootstrap >/dev/null && [ ! -x /usr/sbin/debootstrap ]; then
		say "installing debootstrap"
		$SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
			--no-install-recommends debootstrap >/dev/null || { say "cannot install debootstrap"; exit 1; }
	fi
	root=$(mktemp -d "$cache/rootfs.XXXXXX")
	trap '$SUDO rm -rf "$root" "$tarball.tmp"' EXIT
	say "debootstrap --variant=minbase bookworm (about a minute)"
	if ! $SUDO env PATH="$PATH:/usr/sbin:/sbin" debootstrap --variant=minbase bookworm "$root" \
		>"$cache/debootstrap.log" 2>&1; then
		say "debootstrap failed; last lines of $cache/debootstrap.log:"
		tail -n 5 "$cache/debootstrap.log" >&2
		exit 1
	fi
	# Like the registry's slim image: no package lists, no apt caches.
	$SUDO rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*
	$SUDO tar -C "$root" -cf "$tarball.tmp" .
	$SUDO chown "$(id -u):$(id -g)" "$tarball.tmp"
	mv "$tarball.tmp" "$tarball"
fi
say "importing $tarball as $name"
if ! "$engine" import --change 'CMD ["bash"]' "$tarball" "$name" >"$cache/import.log" 2>&1; then
	say "$engine import failed: $(tail -n 3 "$cache/import.log" | tr '\n' ' ')"
	exit 1
fi
