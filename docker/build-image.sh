#!/usr/bin/env bash
# What `make images` runs (the Makefile passes its variables in the
# environment; docker/README.md): picks the container engine and the base
# image, saying which and why on stderr, then builds $IMAGE:$IMAGE_TAG.
#
#   engine  IMAGE_ENGINE when given; else docker when its engine answers;
#           else podman, installed with apt-get (as root, or with sudo) when
#           it is missing, as `make deps` installs the build's packages.
#   base    IMAGE_BASE when the engine has it already or can pull it within
#           IMAGE_PULL_TIMEOUT seconds; else, for debian:bookworm-slim, a
#           stand-in made from Debian's archive by debootstrap
#           (docker/debian-base.sh; root or sudo). IMAGE_DEBOOTSTRAP=1
#           always makes the stand-in, IMAGE_DEBOOTSTRAP=0 never does.
#
# Exit status 0 when the image is built; 1 with the reason on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BUILD:=build}" "${IMAGE:=gnn-dist}" "${IMAGE_TAG:?IMAGE_TAG is required}" "${IMAGE_ENGINE:=}"
: "${IMAGE_BASE:=debian:bookworm-slim}" "${IMAGE_DEBOOTSTRAP:=auto}" "${IMAGE_PULL_TIMEOUT:=60}"
: "${PODMAN_FLAGS:=}" "${IMAGE_FLAGS:=}"
DEBOOTSTRAP_BASE=debian:bookworm-slim   # what docker/debian-base.sh makes

say() { echo "make images: $*" >&2; }
die() { say "$*"; exit 1; }

# root, or sudo in front (apt-get, debootstrap); fails when neither.
as_root() {
	if [ "$(id -u)" = 0 ]; then
		"$@"
	elif command -v sudo >/dev/null; then
		sudo "$@"
	else
		say "needs root or sudo: $*"
		return 1
	fi
}

install_podman() {
	# runc as CI uses it; a non-root user's podman also needs the rootless helpers.
	local pkgs=(podman runc)

	[ "$(id -u)" = 0 ] || pkgs+=(uidmap slirp4netns fuse-overlayfs)
	say "engine: podman, installing it (no docker engine answers and podman is not installed): apt-get install ${pkgs[*]}"
	{ as_root apt-get update -qq &&
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; } ||
		die "apt-get could not install: ${pkgs[*]} (install docker or podman, or set IMAGE_ENGINE)"
	podman info >/dev/null 2>&1 || die "podman does not work here: $(podman info 2>&1 | tail -n 1)"
}

pick_engine() {
	if [ -n "$IMAGE_ENGINE" ]; then
		engine=$IMAGE_ENGINE
		say "engine: $engine (IMAGE_ENGINE)"
	elif timeout 10 docker info >/dev/null 2>&1; then
		engine=docker
		say "engine: docker (its engine answers)"
	elif command -v podman >/dev/null; then
		engine=podman
		say "engine: podman (no docker engine answers)"
	else
		install_podman
		engine=podman
	fi
}

has_image() {
	if [ "$engine" = podman ]; then podman image exists "$1"; else "$engine" image inspect "$1" >/dev/null 2>&1; fi
}

# A Docker Hub short name (debian:bookworm-slim) in full, so that podman
# pulls it whatever its registries.conf searches; others as they are.
full_name() {
	local first=${1%%/*}

	if [ "$first" != "$1" ] && { [[ $first == *[.:]* ]] || [ "$first" = localhost ]; }; then
		echo "$1"
	elif [ "$first" = "$1" ]; then
		echo "docker.io/library/$1"
	else
		echo "docker.io/$1"
	fi
}

# Pulls IMAGE_BASE within IMAGE_PULL_TIMEOUT s; false, with the engine's
# last line in $pull_error, when it cannot.
pull_base() {
	local full log=$BUILD/image-cache/pull.log

	full=$(full_name "$IMAGE_BASE")
	mkdir -p "$BUILD/image-cache"
	if ! timeout -k 5 "$IMAGE_PULL_TIMEOUT" "$engine" pull "$full" >"$log" 2>&1; then
		pull_error=$(tail -n 1 "$log")
		[ -n "$pull_error" ] || pull_error="no answer within ${IMAGE_PULL_TIMEOUT} s"
		return 1
	fi
	# Under its short name too, as the Dockerfile's FROM names it.
	has_image "$IMAGE_BASE" || "$engine" tag "$full" "$IMAGE_BASE"
}

debootstrap_base() {
	as_root true || die "making $IMAGE_BASE with debootstrap needs root or sudo"
	docker/debian-base.sh "$engine" "$BUILD/image-cache" "$IMAGE_BASE" ||
		die "could not make $IMAGE_BASE from Debian's archive (above)"
}

pick_base() {
	local pull_error=""

	case "$IMAGE_DEBOOTSTRAP" in
	1)
		say "base: $IMAGE_BASE made from Debian's archive by debootstrap (IMAGE_DEBOOTSTRAP=1)"
		debootstrap_base
		return ;;
	0)
		say "base: $IMAGE_BASE as the engine has it or pulls it (IMAGE_DEBOOTSTRAP=0)"
		return ;;
	esac
	if has_image "$IMAGE_BASE"; then
		say "base: $IMAGE_BASE (the engine has it)"
	elif pull_base; then
		say "base: $IMAGE_BASE (pulled)"
	elif [ "$IMAGE_BASE" = "$DEBOOTSTRAP_BASE" ]; then
		say "base: $IMAGE_BASE made from Debian's archive by debootstrap (it could not be pulled: $pull_error)"
		debootstrap_base
	else
		die "base: $IMAGE_BASE could not be pulled ($pull_error); only $DEBOOTSTRAP_BASE can be made without a registry"
	fi
}

pick_engine
pick_base
# Only the sources the build reads: a docker daemon would otherwise be sent
# every build folder.
rm -rf "$BUILD/image-context" && mkdir -p "$BUILD/image-context"
tar -cf - Makefile libcommon services tests | tar -xf - -C "$BUILD/image-context"
flags=$IMAGE_FLAGS
[ "$engine" != podman ] || flags="$PODMAN_FLAGS${flags:+ $flags}"
echo "$engine build ${flags:+$flags }--build-arg BASE_IMAGE=$IMAGE_BASE -f docker/Dockerfile -t $IMAGE:$IMAGE_TAG $BUILD/image-context"
# shellcheck disable=SC2086  # the flags are lists of words
exec "$engine" build $flags --build-arg BASE_IMAGE="$IMAGE_BASE" -f docker/Dockerfile -t "$IMAGE:$IMAGE_TAG" \
	"$BUILD/image-context"
