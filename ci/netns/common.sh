# Sourced by ci/netns-bed.sh: the names and addresses of one test bed, from two variables.
#
#   CB_NETNS_PREFIX  name prefix (default `cb-`): hosts PREFIXnode1..N, launcher PREFIXhead,
#                    bridge PREFIXbr, root-side veth ends PREFIXv1..N and PREFIXvh
#   CB_NETNS_NET     first three octets of the bed's private /24 (default 10.231.0): hosts get
#                    .1 .. .N, the launcher .254. The addresses exist only inside the bed's
#                    namespaces; the bridge and the root namespace get none.
#
# Two beds with different prefixes are separate layer-2 segments and cannot see each other, so
# they may even share the subnet.

PREFIX=${CB_NETNS_PREFIX:-cb-}
NET=${CB_NETNS_NET:-10.231.0}

bed_die() {
  echo "netns-bed: $*" >&2
  exit 2
}

# Interface names are at most 15 bytes: PREFIX + "br" / "v4" / "vh" must fit.
[[ $PREFIX =~ ^[a-z][a-z0-9-]{0,10}$ ]] || bed_die "CB_NETNS_PREFIX '$PREFIX' is not allowed; expected a lower-case letter then up to 10 of [a-z0-9-], e.g. cb-"
[[ $NET =~ ^(10\.[0-9]{1,3}|192\.168|172\.(1[6-9]|2[0-9]|3[01]))\.[0-9]{1,3}$ ]] ||
  bed_die "CB_NETNS_NET '$NET' is not a private /24 prefix; expected e.g. 10.231.0"

BRIDGE=${PREFIX}br
HEAD=${PREFIX}head
SUBNET=$NET.0/24
MAX_HOSTS=4

host_name() { echo "${PREFIX}node$1"; }
host_addr() { echo "$NET.$1"; }
host_veth() { echo "${PREFIX}v$1"; }
HEAD_ADDR=$NET.254
HEAD_VETH=${PREFIX}vh

# Hosts of the bed that is up now, in order (none: empty).
bed_hosts() {
  local i
  for i in $(seq 1 $MAX_HOSTS); do
    [ -e "/run/netns/$(host_name "$i")" ] && host_name "$i"
  done
  return 0
}

# 1-based index of a host given by name (PREFIXnodeI) or by index.
host_index() {
  local h=$1
  [[ $h =~ ^[1-4]$ ]] && { echo "$h"; return; }
  [[ $h =~ ^${PREFIX}node([1-4])$ ]] || bed_die "unknown host '$h'; expected 1..$MAX_HOSTS or $(host_name 1)..$(host_name $MAX_HOSTS)"
  echo "${BASH_REMATCH[1]}"
}
