# Helpers for scripts that run inside the Soft-RoCE guest; source, do not run.
# Reads sysfs with shell built-ins only: forking a process per file is very
# slow under TCG.

# rxe_port_state DEV: prints the state of port 1 ("4: ACTIVE" when usable).
rxe_port_state() {
  local s=
  read -r s <"/sys/class/infiniband/$1/ports/1/state" 2>/dev/null
  printf '%s\n' "$s"
}

# rxe_gid_index DEV: prints the index of the first IPv4-mapped RoCE v2 GID of
# port 1 (the one RoCE v2 traffic over IPv4 uses); returns 1 when there is
# none. The index depends on the addresses of the netdev: never assume 0.
rxe_gid_index() {
  local dir=/sys/class/infiniband/$1/ports/1 i=0 gid type
  while [ -e "$dir/gids/$i" ]; do
    gid= type=
    read -r gid <"$dir/gids/$i" 2>/dev/null
    read -r type <"$dir/gid_attrs/types/$i" 2>/dev/null
    case $gid in
      0000:0000:0000:0000:0000:ffff:*)
        if [ "$type" = "RoCE v2" ]; then printf '%s\n' "$i"; return 0; fi ;;
    esac
    i=$((i + 1))
    # Entries are filled from the bottom; a long run of empty ones ends the table.
    [ $i -gt 64 ] && [ "$gid" = "0000:0000:0000:0000:0000:0000:0000:0000" ] && break
  done
  return 1
}

# rxe_gid_ipv4 DEV INDEX: the IPv4 address inside an IPv4-mapped GID.
rxe_gid_ipv4() {
  local gid
  read -r gid <"/sys/class/infiniband/$1/ports/1/gids/$2" || return 1
  local h=${gid#0000:0000:0000:0000:0000:ffff:}
  h=${h//:/}
  printf '%d.%d.%d.%d\n' "0x${h:0:2}" "0x${h:2:2}" "0x${h:4:2}" "0x${h:6:2}"
}
