#!/bin/sh
# build-image.sh builds robotsgate's container image without a daemon,
# with buildah (Debian's): the same image as deploy/Dockerfile, from
# scratch, with the static binary compiled by this machine's Go, Debian's
# CA certificates (/etc/ssl/certs/ca-certificates.crt, the file the
# Dockerfile's golang:bookworm stage has), the non-root user robotsgate
# (65532) and the state directory /var/lib/robotsgate as a volume.
#
#   deploy/build-image.sh [TAG]          # as root; default localhost/robotsgate:latest
#   podman run -p 127.0.0.1:8080:8080 -v robotsgate-state:/var/lib/robotsgate localhost/robotsgate
#
# BUILDAH_STORAGE, if set, is passed to every buildah command (e.g.
# "--root DIR --runroot DIR --storage-driver vfs": e2e/deploy_image_test.go
# builds into storage of its own). OCI_ARCHIVE, if set, is a file the
# image is also written to (oci-archive:, for docker load or skopeo).
set -eu
tag=${1:-localhost/robotsgate:latest}
root=$(cd "$(dirname "$0")/.." && pwd)
storage=${BUILDAH_STORAGE:-}
work=$(mktemp -d)
ctr=
cleanup() {
	[ -z "$ctr" ] || buildah $storage rm "$ctr" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

certs=/etc/ssl/certs/ca-certificates.crt
[ -r "$certs" ] || { echo "build-image.sh: $certs is missing (apt-get install ca-certificates)" >&2; exit 1; }

(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$work/robotsgate" .)

ctr=$(buildah $storage from scratch)
# The files go into the container's root as they are to be (owners,
# modes): as root, or under buildah unshare.
mnt=$(buildah $storage mount "$ctr")
install -D -m 0644 "$certs" "$mnt/etc/ssl/certs/ca-certificates.crt"
install -D -m 0644 "$root/deploy/container/passwd" "$mnt/etc/passwd"
install -D -m 0644 "$root/deploy/container/group" "$mnt/etc/group"
install -D -m 0644 "$root/deploy/container/config.yaml" "$mnt/etc/robotsgate/config.yaml"
install -D -m 0755 "$work/robotsgate" "$mnt/usr/local/bin/robotsgate"
install -d -m 0700 -o 65532 -g 65532 "$mnt/var/lib/robotsgate"
buildah $storage umount "$ctr" >/dev/null
buildah $storage config --user 65532:65532 --workingdir /var/lib/robotsgate --volume /var/lib/robotsgate \
	--port 8080 --port 9090 --entrypoint '["/usr/local/bin/robotsgate"]' \
	--cmd 'serve -config /etc/robotsgate/config.yaml' "$ctr"
buildah $storage commit --quiet "$ctr" "$tag"
if [ -n "${OCI_ARCHIVE:-}" ]; then
	buildah $storage push --quiet "$tag" "oci-archive:$OCI_ARCHIVE:$tag"
fi
