# shellcheck shell=bash
# Sourced by scripts/demo.sh and scripts/test-image.sh (bash).
#
# as_owner CMD...: runs CMD as the owner of the current directory (the checkout), as is when that is who we
# are. Run as root (sudo, su, a root shell, a container) in someone else's checkout, npm and the build then
# write node_modules/ and dist/ as that user, never as root, so that the user's own `npm install && npm test`
# still works afterwards. AS_OWNER_PATH_PREFIX, when set, is put in front of PATH (the directory of the node
# that was chosen). AS_OWNER_SCRATCH names a directory for a temporary home when the owner has none here.

owner_uid() { stat -c %u .; }
owner_gid() { stat -c %g .; }

as_owner() {
  local uid gid path
  uid="$(owner_uid)"
  gid="$(owner_gid)"
  path="${AS_OWNER_PATH_PREFIX:+$AS_OWNER_PATH_PREFIX:}$PATH"
  if [ "$(id -u)" = "$uid" ]; then
    PATH="$path" "$@"
    return
  fi
  if [ "$(id -u)" != 0 ]; then
    printf '%s: this checkout belongs to uid %s, not to you (uid %s): run it as its owner\n' \
      "$(basename "$0")" "$uid" "$(id -u)" >&2
    return 1
  fi
  local entry home groups=(--clear-groups)
  entry="$(getent passwd "$uid" || true)"
  home="$(printf '%s' "$entry" | cut -d: -f6)"
  [ -z "$entry" ] || groups=(--init-groups)
  if [ -z "$home" ] || [ ! -d "$home" ] || [ "$(stat -c %u "$home")" != "$uid" ]; then
    # An owner with no home of their own here (e.g. a checkout mounted into a container): npm gets one.
    home="${AS_OWNER_SCRATCH:?AS_OWNER_SCRATCH must name a scratch directory}/home-$uid"
    mkdir -p "$home"
    chown "$uid:$gid" "$home"
  fi
  setpriv --reuid="$uid" --regid="$gid" "${groups[@]}" env HOME="$home" PATH="$path" "$@"
}

# check_owned DIR...: fails, saying how to fix it, when something in one of the DIRs belongs to someone other
# than the checkout's owner (left by an earlier run as root, e.g. `sudo npm test`).
check_owned() {
  local d uid stray
  uid="$(owner_uid)"
  for d in "$@"; do
    [ -e "$d" ] || continue
    stray="$(find "$d" ! -user "$uid" -print -quit)"
    if [ -n "$stray" ]; then
      printf '%s: %s belongs to uid %s, not to the checkout'"'"'s owner (uid %s), probably from an earlier run as root: give %s/ back with: sudo chown -R %s:%s %s\n' \
        "$(basename "$0")" "$stray" "$(stat -c %u "$stray")" "$uid" "$d" "$uid" "$(owner_gid)" "$(pwd)/$d" >&2
      return 1
    fi
  done
}
