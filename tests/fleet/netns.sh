# The fleet scripts' network (sourced): a bridge in a switch namespace TAG-sw and namespaces
# joined to it by veth pairs. Every namespace made is appended to NETNS (declared by the
# caller), which the caller's EXIT trap deletes.

# netns_switch TAG: the switch namespace and its bridge.
netns_switch() {
  ip netns add "$1-sw"
  NETNS+=("$1-sw")
  ip -n "$1-sw" link add br0 type bridge
  ip -n "$1-sw" link set br0 up
}

# netns_join TAG NS PEER ADDR/PREFIX: namespace NS on the switch, its eth0 at ADDR (the veth's
# switch end named pPEER).
netns_join() {
  ip netns add "$2"
  NETNS+=("$2")
  ip -n "$2" link add eth0 type veth peer name "p$3" netns "$1-sw"
  ip -n "$1-sw" link set "p$3" master br0 up
  ip -n "$2" addr add "$4" dev eth0
  ip -n "$2" link set eth0 up
  ip -n "$2" link set lo up
}
