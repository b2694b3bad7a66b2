#!/bin/bash
# First boot of a Multus worker (Amazon Linux 2023, as root, from the launch template's user data): gives
# the node its Multus ENI and brings it up the way multus-ipmgr and ipvlan need it.
#  1. creates an ENI in the Multus subnet of this node's zone, with the Multus security group, tagged
#     node.k8s.amazonaws.com/no_manage=true (the VPC CNI leaves it alone; multus-ipmgr's IAM policy acts
#     only on ENIs with this tag), deleted with the instance;
#  2. names its interface eth1 on every node (the NADs' "master": eth1) and keeps DHCP, IPv6 router
#     advertisements and link-local addressing off it: the interface is up without an address, ipvlan's
#     children carry the pod addresses;
#  3. attaches it as device index 1 and waits for the interface;
#  4. turns rp_filter off on it (and for all and default, as the AWS Multus guide's user data does), so
#     that the kernel does not drop pod traffic whose source it would route through another interface.
# Needs on the node role: ec2:CreateNetworkInterface, ec2:CreateTags, ec2:AttachNetworkInterface,
# ec2:ModifyNetworkInterfaceAttribute (iam-policy-node-multus-eni.json; AmazonEKS_CNI_Policy grants them
# too), the AWS CLI (in the AL2023 EKS AMI) and IMDSv2.
set -euo pipefail

# Yours: the Multus subnet of each zone your nodes run in, and the Multus ENIs' security group.
MULTUS_SUBNETS="us-east-1a=subnet-0aaaaaaaaaaaaaaaa us-east-1b=subnet-0bbbbbbbbbbbbbbbb"
MULTUS_SECURITY_GROUP="sg-0cccccccccccccccc"
IFNAME=eth1

imds() {
  local token
  token="$(curl -sf -X PUT http://169.254.169.254/latest/api/token -H 'X-aws-ec2-metadata-token-ttl-seconds: 60')"
  curl -sf -H "X-aws-ec2-metadata-token: $token" "http://169.254.169.254/latest/meta-data/$1"
}
INSTANCE="$(imds instance-id)"
ZONE="$(imds placement/availability-zone)"
export AWS_REGION="$(imds placement/region)"
SUBNET=""
for pair in $MULTUS_SUBNETS; do [ "${pair%%=*}" = "$ZONE" ] && SUBNET="${pair#*=}"; done
[ -n "$SUBNET" ] || { echo "multus-eni: no Multus subnet for zone $ZONE in MULTUS_SUBNETS" >&2; exit 1; }

read -r ENI MAC < <(aws ec2 create-network-interface --subnet-id "$SUBNET" --groups "$MULTUS_SECURITY_GROUP" \
  --description "multus $INSTANCE" \
  --tag-specifications 'ResourceType=network-interface,Tags=[{Key=node.k8s.amazonaws.com/no_manage,Value=true}]' \
  --query '[NetworkInterface.NetworkInterfaceId, NetworkInterface.MacAddress]' --output text)

# Before the attach, so that udev and systemd-networkd apply them when the interface appears (a file
# sorting before amazon-ec2-net-utils' 70-*.network wins).
cat >/etc/systemd/network/10-multus.link <<LINK
[Match]
MACAddress=$MAC
[Link]
Name=$IFNAME
LINK
cat >/etc/systemd/network/10-multus.network <<NETWORK
[Match]
MACAddress=$MAC
[Link]
RequiredForOnline=no
[Network]
DHCP=no
LinkLocalAddressing=no
IPv6AcceptRA=no
NETWORK
cat >/etc/sysctl.d/90-multus.conf <<SYSCTL
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

for _ in $(seq 60); do [ -e "/sys/class/net/$IFNAME" ] && break; sleep 1; done
[ -e "/sys/class/net/$IFNAME" ] || { echo "multus-eni: $ENI ($MAC) did not appear as $IFNAME" >&2; exit 1; }
sysctl -q -w "net.ipv4.conf.$IFNAME.rp_filter=0"
ip link set dev "$IFNAME" up
ip -br addr show dev "$IFNAME"   # e.g. eth1  UP  (no address: none is wanted)
