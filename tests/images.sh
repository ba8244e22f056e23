#!/usr/bin/env bash
# `make test-images`: builds the gnn-dist image with podman the way a machine
# without registry access can (debian:bookworm-slim made by debootstrap from
# Debian's archive, docker/debian-base.sh), then checks it:
#   - every binary in the image runs its --help, as the image's user, with a
#     read-only root, no capabilities, no network;
#   - the image: non-root user 10001, exec-form entrypoint, binaries on PATH,
#     every shared library resolved, no compiler and no -dev package;
#   - a real run inside it: gnn-partition partitions the synthetic `tiny`
#     graph onto a tmpfs under the read-only root;
#   - make images said which engine and base it took (the base made here).
# Needs root (debootstrap, podman as root); installs podman, runc and
# debootstrap with apt-get when missing, and skips when it cannot.
# Usage: tests/images.sh [BUILD_DIR]; IMAGES_RUN_TESTS=1 also builds the
# Dockerfile's test stage (the whole suite inside the build stage).
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$(mkdir -p "${1:-$ROOT/build}" && cd "${1:-$ROOT/build}" && pwd)
IMG=gnn-dist-imagetest:test
RUN_FLAGS=(--rm --network none --ulimit nofile=1024:1024 --ulimit nproc=1000:1000)
pass=0 failed=0 skipped=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
bad() { echo "FAIL $1: $2"; failed=$((failed + 1)); }
skip_all() { echo "SKIP images: $1"; echo "0 passed, 0 failed, 1 skipped"; exit 0; }
check() {  # check NAME WHAT COMMAND...
	local name=$1 what=$2
	shift 2
	if "$@"; then ok "$name"; else bad "$name" "$what"; fi
}

[ "$(id -u)" = 0 ] || skip_all "needs root (debootstrap, podman as root)"
missing=""
command -v podman >/dev/null || missing="$missing podman"
[ -x /usr/sbin/runc ] || missing="$missing runc"
command -v debootstrap >/dev/null || missing="$missing debootstrap"
if [ -n "$missing" ]; then
	echo "images: installing$missing" >&2
	{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing; } \
		>/dev/null 2>&1 || skip_all "cannot install$missing"
fi
podman info >/dev/null 2>&1 || skip_all "podman does not work here: $(podman info 2>&1 | tail -n 1)"

t0=$SECONDS
if ! "$ROOT/docker/debian-base.sh" podman "$BUILD/image-cache" debian:bookworm-slim; then
	skip_all "could not make debian:bookworm-slim from Debian's archive"
fi
t_base=$((SECONDS - t0))

t0=$SECONDS
log=$BUILD/image-build.log
if make -C "$ROOT" --no-print-directory images BUILD="$BUILD" IMAGE_ENGINE=podman \
	IMAGE=${IMG%%:*} IMAGE_TAG=${IMG##*:} >"$log" 2>&1; then
	ok image_builds
else
	bad image_builds "make images failed; last lines of $log:"
	tail -n 15 "$log"
	echo "$pass passed, $failed failed, $skipped skipped"
	exit 1
fi
t_build=$((SECONDS - t0))
# The base made above is there: make images must take it, and say so.
check image_choices "make images names its engine and base and why (got: $(grep '^make images:' "$log" | tr '\n' ' '))" \
	bash -c "grep -q '^make images: engine: podman (IMAGE_ENGINE)' '$log' &&
		grep -q '^make images: base: debian:bookworm-slim (the engine has it)' '$log'"

# Every binary's --help, run as a pod runs it (the chart's securityContext).
bins=$(podman run "${RUN_FLAGS[@]}" "$IMG" sh -c 'ls /usr/local/bin')
help_bad=""
for b in $bins; do
	out=$(podman run "${RUN_FLAGS[@]}" --read-only --cap-drop ALL --security-opt no-new-privileges \
		"$IMG" "$b" --help 2>&1)
	rc=$?
	if [ $rc != 0 ] || ! grep -q "^usage: $b" <<<"$out"; then
		help_bad="$help_bad $b(rc=$rc: $(head -n 1 <<<"$out"))"
	fi
done
n_bins=$(wc -w <<<"$bins")
check every_binary_help "--help failed in the image:$help_bad" \
	bash -c "[ -z '$help_bad' ] && [ $n_bins -ge 5 ] && for b in gnn-partition gnn-graphstore gnn-sampler gnn-trainer gnn-cli; do grep -qw \$b <<<'$bins' || exit 1; done"

cfg=$(podman image inspect --format '{{.Config.User}}|{{json .Config.Entrypoint}}|{{json .Config.Cmd}}' "$IMG")
check image_config "user 10001, exec-form entrypoint (got $cfg)" \
	bash -c "grep -q '^10001:10001|\[\"/usr/bin/env\",\"--\"\]|\[\"gnn-trainer\",\"--help\"\]$' <<<'$cfg'"
who=$(podman run "${RUN_FLAGS[@]}" "$IMG" id -u)
check runs_as_non_root "the image's processes run as uid 10001 (got $who)" [ "$who" = 10001 ]

libs=$(podman run "${RUN_FLAGS[@]}" "$IMG" sh -c 'for b in /usr/local/bin/*; do ldd "$b"; done' 2>&1)
check libraries_resolved "unresolved libraries: $(grep 'not found' <<<"$libs" | sort -u | tr '\n' ' ')" \
	bash -c "! grep -q 'not found' <<<'$libs' && grep -q libnng <<<'$libs' && grep -q libmetis <<<'$libs' && grep -q libopenblas <<<'$libs'"
pkgs=$(podman run "${RUN_FLAGS[@]}" "$IMG" dpkg-query -W -f '${Package}\n')
# (gcc-12-base is the base system's, for libgcc-s1: not a compiler.)
devel='-dev$|^gcc(-[0-9]+)?$|^cpp(-[0-9]+)?$|^g\+\+|^make$|^build-essential$|^binutils'
check runtime_only "no compiler or -dev package in the runtime image: $(grep -E -- "$devel" <<<"$pkgs" | tr '\n' ' ')" \
	bash -c "! grep -q -E -- '$devel' <<<'$pkgs' && grep -q '^libopenblas0-pthread$' <<<'$pkgs'"

out=$(podman run "${RUN_FLAGS[@]}" --read-only --tmpfs /tmp --cap-drop ALL "$IMG" \
	sh -c 'gnn-partition --synthetic tiny --parts 2 --out /tmp/p 2>/dev/null >/dev/null && ls /tmp/p' 2>&1)
check partitions_in_image "gnn-partition in the image (read-only root, tmpfs /tmp) writes meta.json and 2 partitions (got: $out)" \
	bash -c "grep -qx meta.json <<<'$out' && grep -qx part-0 <<<'$out' && grep -qx part-1 <<<'$out'"

size=$(podman image inspect --format '{{.Size}}' "$IMG")
echo "  (base image: ${t_base}s, image build: ${t_build}s, runtime image: $((size / 1000000)) MB)"

if [ "${IMAGES_RUN_TESTS:-0}" = 1 ]; then
	if podman build --network host --ulimit nofile=1024:1024 --ulimit nproc=1000:1000 --target test \
		-f "$ROOT/docker/Dockerfile" "$BUILD/image-context" >"$BUILD/image-test.log" 2>&1; then
		ok suite_in_build_stage
	else
		bad suite_in_build_stage "the Dockerfile's test stage failed: $(grep -E '^(FAIL|[0-9]+ passed)' "$BUILD/image-test.log" | tail -n 3 | tr '\n' ' ')"
	fi
fi
podman rmi "$IMG" >/dev/null 2>&1
echo "$pass passed, $failed failed, $skipped skipped"
[ $failed = 0 ]
