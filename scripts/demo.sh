#!/usr/bin/env bash
# The README's demo: builds multus-ipmgr, starts the EC2/IMDS simulator in a network namespace of its own,
# makes a "pod" namespace whose net1 carries the MAC of the simulated Multus ENI (as ipvlan would) and two
# addresses, runs `multus-ipmgr init` inside it, and shows the ENI's addresses before and after.
# Everything it creates is removed on exit, also on failure or Ctrl-C.
set -euo pipefail
SCRIPT="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SCRIPT")/.."

# Run it as yourself: it installs and builds as you, then asks sudo for the part that needs root (network
# namespaces). Run as root (sudo, su, a root shell or a container), it builds as the owner of the checkout, so
# that node_modules/ and dist/ never belong to root in someone else's tree and `npm install && npm test`
# works afterwards as that user. _IPMGR_DEMO_BUILT and _IPMGR_DEMO_NODE pass the build and the node
# executable across the sudo re-execution (sudo resets PATH, and Node is often installed per user).

die() { printf 'demo: %s\n' "$*" >&2; exit 1; }
command -v ip >/dev/null || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] ||
  die "needs iproute2 (the ip command): install it, e.g. apt-get install iproute2 or dnf install iproute"
NODE="${_IPMGR_DEMO_NODE:-$(command -v node || true)}"
if [ -z "$NODE" ]; then
  if [ "$(id -u)" = 0 ] && [ -n "${SUDO_USER:-}" ]; then
    die "needs Node.js 20 or newer, and root's PATH (which sudo resets) has none: run it as yourself, bash scripts/demo.sh, and it asks sudo for the network namespaces only"
  fi
  die "needs Node.js 20 or newer on the PATH: install it from https://nodejs.org or your distribution's nodejs package"
fi
"$NODE" -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' ||
  die "needs Node.js 20 or newer, found $("$NODE" --version) at $NODE: install Node.js 20 or newer"
# shellcheck source=scripts/as-owner.sh
. scripts/as-owner.sh
AS_OWNER_PATH_PREFIX="$(dirname "$NODE")"

WORK="$(mktemp -d)"
AS_OWNER_SCRATCH="$WORK"
SIM_NS="ipmdemo-$$-sim"
POD_NS="ipmdemo-$$-pod"
SIM_PID=""
cleanup() {
  if [ -n "$SIM_PID" ]; then kill "$SIM_PID" 2>/dev/null || true; fi
  if [ "$(id -u)" = 0 ]; then
    ip netns del "$POD_NS" 2>/dev/null || true
    ip netns del "$SIM_NS" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

if [ "${_IPMGR_DEMO_BUILT:-}" != 1 ]; then
  check_owned node_modules dist || exit 1
  if [ ! -d node_modules ]; then
    echo "== installing dependencies (npm install)"
    as_owner npm install --no-audit --no-fund >/dev/null
  fi
  echo "== building dist/multus-ipmgr.mjs"
  as_owner npm run --silent build
fi

if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null; then
    echo "== network namespaces need root: running the rest with sudo"
    trap - EXIT INT TERM
    rm -rf "$WORK"
    exec sudo -- env _IPMGR_DEMO_BUILT=1 _IPMGR_DEMO_NODE="$NODE" bash "$SCRIPT"
  fi
  die "network namespaces need root, and sudo is not installed: run the rest as root, e.g. su root -c 'bash $SCRIPT'"
fi
[ -s dist/multus-ipmgr.mjs ] || die "dist/multus-ipmgr.mjs is missing: run npm run build first"

ENI_MAC="02:00:00:00:0b:01"   # eni-0multus1 in examples/world-demo.yaml
POD_ADDRESSES=("198.51.100.200/25" "2001:db8:100:2::200/64")
# The pod ranges, each covered by an explicit subnet CIDR reservation in the world, clear of AWS's reserved addresses.
ALLOWED="198.51.100.192/27,2001:db8:100:2::200/120"

echo "== network namespaces: $SIM_NS (simulator, 192.0.2.1) and $POD_NS (the pod)"
ip netns add "$SIM_NS"
ip netns add "$POD_NS"
ip -n "$SIM_NS" link set lo up
ip -n "$POD_NS" link set lo up
ip link add eth0 netns "$POD_NS" type veth peer name demo-sim netns "$SIM_NS"
ip -n "$SIM_NS" addr add 192.0.2.1/24 dev demo-sim
ip -n "$SIM_NS" link set demo-sim up
ip -n "$POD_NS" addr add 192.0.2.10/24 dev eth0
ip -n "$POD_NS" link set eth0 up
ip link add net1 netns "$POD_NS" type veth peer name demo-wire netns "$SIM_NS"
ip -n "$POD_NS" link set dev net1 address "$ENI_MAC"
ip -n "$SIM_NS" link set demo-wire up
ip -n "$POD_NS" link set net1 up
for a in "${POD_ADDRESSES[@]}"; do
  extra=(); [[ "$a" == *:* ]] && extra=(nodad)
  ip -n "$POD_NS" addr add "$a" dev net1 "${extra[@]}"
done

echo "== starting the simulator with examples/world-demo.yaml"
ip netns exec "$SIM_NS" "$NODE" dist/multus-ipmgr.mjs sim --world examples/world-demo.yaml --host 192.0.2.1 \
  >"$WORK/ready" 2>"$WORK/sim.log" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$WORK/ready" ] && break; sleep 0.05; done
[ -s "$WORK/ready" ] || die "the simulator did not start: $(cat "$WORK/sim.log")"
READY="$(head -n 1 "$WORK/ready")"
field() { "$NODE" -e 'const r = JSON.parse(process.argv[1]); console.log(eval("r." + process.argv[2]))' "$READY" "$1"; }
EC2="$(field ec2)"
CONTROL="$(field control)"
IMDS="$(field 'imds["i-0demo1"]')"
echo "   ready: $READY"

# The node -e programs are JavaScript in single quotes: their ${...} are template literals, not the shell's.
# shellcheck disable=SC2016
show_eni() {
  ip netns exec "$SIM_NS" "$NODE" --input-type=module -e '
    const state = await (await fetch(process.argv[1] + "/state")).json();
    const eni = state.enis.find((e) => e.eniId === "eni-0multus1");
    console.log(`   eni-0multus1 (${eni.mac})  IPv4: ${eni.ipv4s.join(", ")}  IPv6: ${eni.ipv6s.join(", ") || "none"}`);
  ' "$CONTROL"
}
# shellcheck disable=SC2016
show_calls() {
  ip netns exec "$SIM_NS" "$NODE" --input-type=module -e '
    const calls = await (await fetch(process.argv[1] + "/calls")).json();
    if (calls.length === 0) console.log("   (no EC2 call)");
    for (const c of calls) {
      const p = Object.entries(c.params).filter(([k]) => k !== "Action" && k !== "Version").map(([k, v]) => `${k}=${v}`);
      console.log(`   ${c.action} ${p.join(" ")} -> ${c.outcome}`);
    }
    await fetch(process.argv[1] + "/calls", { method: "DELETE" });
  ' "$CONTROL"
}
# Forgets the calls so far, unlisted, saying how many: the next section then lists only its own.
# shellcheck disable=SC2016
clear_calls() {
  ip netns exec "$SIM_NS" "$NODE" --input-type=module -e '
    const calls = await (await fetch(process.argv[1] + "/calls")).json();
    const cleared = await fetch(process.argv[1] + "/calls", { method: "DELETE" });
    if (!cleared.ok) throw new Error(`clearing the call log: HTTP ${cleared.status}`);
    console.log(`   (${process.argv[2]} made ${calls.length} EC2 calls, reads and DryRun checks; the call log is cleared)`);
  ' "$CONTROL" "$1"
}

echo
echo "== the pod's net1 (MAC of eni-0multus1, as with ipvlan):"
ip -n "$POD_NS" -brief addr show dev net1 | sed 's/^/   /'
echo "== before: the ENI as EC2 sees it"
show_eni

# A command of the CLI inside the pod namespace, configured as the pod's container would be.
in_pod() {
  ip netns exec "$POD_NS" env -i PATH="$PATH" \
    AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=demo AWS_SECRET_ACCESS_KEY=demo \
    AWS_ENDPOINT_URL_EC2="$EC2" AWS_EC2_METADATA_SERVICE_ENDPOINT="$IMDS" \
    IPMGR_ALLOWED_CIDRS="$ALLOWED" IPMGR_TERMINATION_LOG="" \
    "$NODE" dist/multus-ipmgr.mjs "$@"
}
run_init() { in_pod init; }

echo
echo "== multus-ipmgr init (inside the pod namespace; JSON log lines):"
run_init | sed 's/^/   /'
echo "   exit code: ${PIPESTATUS[0]}"
echo "== EC2 calls the simulator received:"
show_calls
echo "== after: the ENI as EC2 sees it"
show_eni

echo
echo "== multus-ipmgr init again: the addresses are in place, so no EC2 call at all"
run_init | sed 's/^/   /'
show_calls

echo
echo "== multus-ipmgr doctor, as kubectl exec would run it in the pod: every check ok"
set +e
in_pod doctor | sed 's/^/   /'
doctor_status="${PIPESTATUS[0]}"
set -e
echo "   exit code: $doctor_status"
[ "$doctor_status" = 0 ] || die "doctor found a problem in the demo's own world (above)"
clear_calls doctor

echo
echo "== an address outside IPMGR_ALLOWED_CIDRS is refused, and nothing is assigned:"
ip -n "$POD_NS" addr add 198.51.100.150/25 dev net1
set +e
run_init >/dev/null
echo "   exit code: $?"
set -e
show_calls
# _IPMGR_DEMO_POD_ONLY=1 (test/demo-pod.test.ts) stops here: the bridge and prefix parts have tests of their own.
[ "${_IPMGR_DEMO_POD_ONLY:-}" = 1 ] && { echo; echo "demo done (pod part only); cleaning up"; exit 0; }
echo
echo "== the bridge (a DaemonSet): the simulator with a Kubernetes API on 127.0.0.1, examples/world-bridge.yaml"
"$NODE" scripts/demo-bridge.mjs

echo
echo "== prefix mode: the node's whereabouts slices held as prefixes, examples/world-prefix.yaml"
"$NODE" scripts/demo-prefix.mjs

echo
echo "demo done; cleaning up"
