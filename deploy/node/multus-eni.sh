#!/bin/bash
# First boot of a Multus worker (Amazon Linux 2023 only: the EKS AMI types AL2023_x86_64_STANDARD and
# AL2023_ARM_64_STANDARD; as root, from the launch template's user data): gives the node its Multus ENI and
# brings it up the way multus-ipmgr and ipvlan need it. Nothing in it is yours to fill in: the subnet and
# the security group come from EC2 tags.
#  1. finds the Multus subnet of this node's VPC and zone: the one subnet tagged
#     multus-ipmgr.io/multus-eni-security-group, whose value is the security group of its Multus ENIs
#     (docs/install-eks.md, step 2, tags it);
#  2. creates an ENI there with that group, tagged node.k8s.amazonaws.com/no_manage=true (the VPC CNI leaves
#     it alone; multus-ipmgr's IAM policy acts only on ENIs with this tag), deleted with the instance;
#  3. names its interface eth1 on every node (the NADs' "master": eth1) and keeps DHCP, IPv6 router
#     advertisements and link-local addressing off it: the interface is up without an address, ipvlan's
#     children carry the pod addresses;
#  4. attaches it as device index 1 and waits for the interface; an ENI it created and could not attach (or
#     mark DeleteOnTermination) is deleted again, also when the boot is stopped by a signal before that, so
#     a failed first boot leaves no ENI behind;
#  5. turns rp_filter off on it (and for all and default, as the AWS Multus guide's user data does), so
#     that the kernel does not drop pod traffic whose source it would route through another interface.
# Needs on the node role: ec2:DescribeSubnets, ec2:CreateNetworkInterface, ec2:CreateTags,
# ec2:AttachNetworkInterface, ec2:ModifyNetworkInterfaceAttribute, and for the clean-up after a failure
# ec2:DetachNetworkInterface, ec2:DescribeNetworkInterfaces and ec2:DeleteNetworkInterface
# (iam-policy-node-multus-eni.json; AmazonEKS_CNI_Policy grants them all), the AWS CLI (in the AL2023 EKS
# AMI) and IMDSv2. Exits 1 with one sentence on stderr when something it checks is missing, or with the AWS
# CLI's status after the CLI's own error when an EC2 call fails.
set -euo pipefail
shopt -s inherit_errexit

IFNAME=eth1
SUBNET_TAG=multus-ipmgr.io/multus-eni-security-group
# Tests only (test/node-multus-eni.test.ts): a directory that stands for / (etc/, sys/). Empty on a node.
ROOT="${MULTUS_ENI_ROOT:-}"

die() { echo "multus-eni: $*" >&2; exit 1; }

# Amazon Linux 2 names interfaces and configures them with ec2-net-utils' network-scripts, not
# systemd-networkd, and its EKS AMIs are at their end: the .link and .network files below would do nothing.
# shellcheck source=/dev/null
os="$(. "$ROOT/etc/os-release" && echo "${ID:-unknown} ${VERSION_ID:-unknown}")"
[ "$os" = "amzn 2023" ] ||
  die "this node runs $os (/etc/os-release), not Amazon Linux 2023 (amzn 2023): multus-eni.sh needs AL2023's systemd-networkd; give the node group the AMI type AL2023_x86_64_STANDARD (or AL2023_ARM_64_STANDARD), amiFamily: AmazonLinux2023 with eksctl"

imds() {
  local token
  token="$(curl -sf -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')" ||
    die "IMDS gave no token (IMDSv2 at 169.254.169.254): is the instance metadata service on?"
  curl -sf -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1" ||
    die "IMDS did not answer meta-data/$1"
}
INSTANCE="$(imds instance-id)"
ZONE="$(imds placement/availability-zone)"
AWS_REGION="$(imds placement/region)"
VPC="$(imds "network/interfaces/macs/$(imds mac)/vpc-id")"
for name in INSTANCE ZONE AWS_REGION VPC; do
  [ -n "${!name}" ] || die "IMDS gave an empty $name: the AWS CLI cannot be pointed at this node's account and region"
done
export AWS_REGION

subnets="$(aws ec2 describe-subnets \
  --filters "Name=vpc-id,Values=$VPC" "Name=availability-zone,Values=$ZONE" "Name=tag-key,Values=$SUBNET_TAG" \
  --query "Subnets[].[SubnetId, Tags[?Key=='$SUBNET_TAG'] | [0].Value]" --output text)"
case "$(printf '%s' "$subnets" | awk 'NF' | wc -l)" in
  1) read -r SUBNET SECURITY_GROUP <<<"$subnets" ;;
  0) die "no subnet of $VPC in $ZONE is tagged $SUBNET_TAG: tag this zone's Multus subnet with its ENIs' security group (aws ec2 create-tags --resources subnet-... --tags Key=$SUBNET_TAG,Value=sg-...)" ;;
  *) die "several subnets of $VPC in $ZONE are tagged $SUBNET_TAG ($(printf '%s' "$subnets" | awk '{print $1}' | paste -sd, -)): keep the tag on the one Multus subnet of the zone" ;;
esac
[[ "$SECURITY_GROUP" =~ ^sg-[0-9a-f]+$ ]] ||
  die "$SUBNET on $SUBNET_TAG says \"$SECURITY_GROUP\", not a security group id (sg-...): set it to the Multus ENIs' group"

ENI=""
ATTACHMENT=""
# Until the ENI is marked DeleteOnTermination, a failure deletes it: left behind, it would outlive the node
# (unattached, or attached without going with the instance) and keep an address of the Multus subnet.
give_back_eni() {
  local status=$?
  if [ "$status" -eq 0 ] || [ -z "$ENI" ]; then return; fi
  if [ -n "$ATTACHMENT" ]; then
    if ! aws ec2 detach-network-interface --attachment-id "$ATTACHMENT" --force ||
      ! aws ec2 wait network-interface-available --network-interface-ids "$ENI"; then
      echo "multus-eni: could not detach $ENI ($ATTACHMENT) after the failure above: detach and delete it" >&2
      return
    fi
  fi
  if aws ec2 delete-network-interface --network-interface-id "$ENI"; then
    echo "multus-eni: deleted $ENI, which this boot created, after the failure above" >&2
  else
    echo "multus-eni: could not delete $ENI after the failure above: aws ec2 delete-network-interface --network-interface-id $ENI" >&2
  fi
}
trap give_back_eni EXIT
# bash runs the EXIT trap when it exits, not when a signal kills it: a boot stopped between the create and
# DeleteOnTermination (systemd's SIGTERM at a shutdown or a unit timeout, Ctrl-C) exits instead, and so gives
# the ENI back too.
trap 'exit 129' HUP
trap 'exit 130' INT
trap 'exit 143' TERM

read -r ENI MAC <<<"$(aws ec2 create-network-interface --subnet-id "$SUBNET" --groups "$SECURITY_GROUP" \
  --description "multus $INSTANCE" \
  --tag-specifications 'ResourceType=network-interface,Tags=[{Key=node.k8s.amazonaws.com/no_manage,Value=true}]' \
  --query '[NetworkInterface.NetworkInterfaceId, NetworkInterface.MacAddress]' --output text)"
[ -n "$MAC" ] || die "create-network-interface gave no MAC for ${ENI:-the new ENI}"

# Before the attach, so that udev and systemd-networkd apply them when the interface appears (a file
# sorting before amazon-ec2-net-utils' 70-*.network wins).
cat >"$ROOT/etc/systemd/network/10-multus.link" <<LINK
[Match]
MACAddress=$MAC
[Link]
Name=$IFNAME
LINK
cat >"$ROOT/etc/systemd/network/10-multus.network" <<NETWORK
[Match]
MACAddress=$MAC
[Link]
RequiredForOnline=no
[Network]
DHCP=no
LinkLocalAddressing=no
IPv6AcceptRA=no
NETWORK
cat >"$ROOT/etc/sysctl.d/90-multus.conf" <<SYSCTL
net.ipv4.conf.all.rp_filter = 0
net.ipv4.conf.default.rp_filter = 0
net.ipv4.conf.$IFNAME.rp_filter = 0
SYSCTL
sysctl -q -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
networkctl reload

ATTACHMENT="$(aws ec2 attach-network-interface --network-interface-id "$ENI" --instance-id "$INSTANCE" \
  --device-index 1 --query AttachmentId --output text)"
aws ec2 modify-network-interface-attribute --network-interface-id "$ENI" \
  --attachment "AttachmentId=$ATTACHMENT,DeleteOnTermination=true"
trap - EXIT HUP INT TERM # from here the ENI goes with the instance

for _ in $(seq 60); do [ -e "$ROOT/sys/class/net/$IFNAME" ] && break; sleep 1; done
[ -e "$ROOT/sys/class/net/$IFNAME" ] || die "$ENI ($MAC) did not appear as $IFNAME"
sysctl -q -w "net.ipv4.conf.$IFNAME.rp_filter=0"
ip link set dev "$IFNAME" up
ip -br addr show dev "$IFNAME" # e.g. eth1  UP  (no address: none is wanted)
