#!/bin/sh
# Installs the CNI plugin multus-ipmgr into the node's CNI binary directory (docs/cni-plugin.md), as the
# bridge DaemonSet's init container runs it: /app/cni/install.sh [SOURCE] [DIRECTORY], by default
# /app/cni/multus-ipmgr into /host/opt/cni/bin (the node's /opt/cni/bin, a hostPath).
#
# Atomic, as Multus' and whereabouts' installers are: the file is copied to a temporary name in the same
# directory, made 0755 and synced, then renamed over multus-ipmgr. A runtime that starts the plugin at that
# moment runs either the old file or the new one, whole: never a half-written file, never "text file busy"
# (a rename does not write into the file a running plugin executes, which keeps its old inode).
# An identical file already there is left alone.
#
# Exit codes: 0 installed or already current; 2 SOURCE is not a file or DIRECTORY not a directory;
# 1 the copy or the rename failed (the temporary file is removed).
set -eu

source="${1:-/app/cni/multus-ipmgr}"
directory="${2:-/host/opt/cni/bin}"
target="$directory/multus-ipmgr"

if [ ! -f "$source" ]; then
  echo "cni-install: no plugin at $source: the image ships it at /app/cni/multus-ipmgr" >&2
  exit 2
fi
if [ ! -d "$directory" ]; then
  echo "cni-install: $directory is not a directory: mount the node's /opt/cni/bin there (a hostPath volume)" >&2
  exit 2
fi
if [ -f "$target" ] && cmp -s "$source" "$target"; then
  echo "cni-install: $target is already current"
  exit 0
fi

temporary="$directory/.multus-ipmgr.install-$$"
trap 'rm -f "$temporary"' EXIT
cp "$source" "$temporary"
chmod 0755 "$temporary"
sync "$temporary"
# -T: a directory in the way fails the rename, instead of taking the file inside it.
mv -fT "$temporary" "$target"
trap - EXIT
echo "cni-install: installed $target"
