#!/bin/bash
# Prints the user data of a managed node group's launch template: MIME multipart (EKS merges it with its
# own nodeadm part on Amazon Linux 2023) with one shell part, multus-eni.sh of this folder.
#   bash deploy/node/user-data.sh > user-data.mime
set -euo pipefail
printf 'MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="==MULTUS=="\n\n'
printf -- '--==MULTUS==\nContent-Type: text/x-shellscript; charset="us-ascii"\n\n'
cat "$(dirname "$0")/multus-eni.sh"
printf -- '\n--==MULTUS==--\n'
