package allocator

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// IPRange is the range cluster IPs are allocated from: a prefix without
// its network address (and, for IPv4, its broadcast address), as kube's.
type IPRange struct {
	prefix netip.Prefix
	size   int
}

// maxIPv6Bits bounds an IPv6 range to its first 2^16 addresses, as
// kube's bitmap allocator does.
const maxIPv6Bits = 16

// ParseIPRange parses --service-cluster-ip-range. An IPv4 range is at
// most a /12 (a bitmap of 128 KiB), as kube-apiserver requires.
func ParseIPRange(s string) (IPRange, error) {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return IPRange{}, fmt.Errorf("service cluster IP range %q: %w", s, err)
	}
	if p != p.Masked() {
		return IPRange{}, fmt.Errorf("service cluster IP range %q is not a network address; did you mean %s?", s, p.Masked())
	}
	hostBits := p.Addr().BitLen() - p.Bits()
	var size int
	switch {
	case p.Addr().Is4() && hostBits > 20:
		return IPRange{}, fmt.Errorf("service cluster IP range %s is too large: an IPv4 range must be /12 or smaller", s)
	case p.Addr().Is4():
		size = 1<<hostBits - 2
	default:
		size = 1<<min(hostBits, maxIPv6Bits) - 1
	}
	if size < 1 {
		return IPRange{}, fmt.Errorf("service cluster IP range %s holds no address to allocate", s)
	}
	return IPRange{prefix: p, size: size}, nil
}

func (r IPRange) String() string { return r.prefix.String() }

// First is the first address of the range, the kubernetes Service's.
func (r IPRange) First() netip.Addr { return r.addr(0) }

// addr is the address at offset i.
func (r IPRange) addr(i int) netip.Addr {
	b := r.prefix.Addr().As16()
	low := binary.BigEndian.Uint64(b[8:]) + uint64(i) + 1
	binary.BigEndian.PutUint64(b[8:], low)
	a := netip.AddrFrom16(b)
	if r.prefix.Addr().Is4() {
		return a.Unmap()
	}
	return a
}

// offset is the offset of a, and whether a is in the range.
func (r IPRange) offset(a netip.Addr) (int, bool) {
	if !r.prefix.Contains(a) {
		return 0, false
	}
	base, ab := r.prefix.Addr().As16(), a.As16()
	if [8]byte(base[:8]) != [8]byte(ab[:8]) {
		return 0, false
	}
	d := binary.BigEndian.Uint64(ab[8:]) - binary.BigEndian.Uint64(base[8:])
	if d < 1 || d > uint64(r.size) {
		return 0, false
	}
	return int(d - 1), true
}

// PortRange is the range node ports are allocated from, both ends in it.
type PortRange struct {
	Base, Size int
}

// ParsePortRange parses --service-node-port-range, "30000-32767".
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, ok := strings.Cut(s, "-")
	a, errA := strconv.Atoi(strings.TrimSpace(lo))
	b, errB := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || errA != nil || errB != nil {
		return PortRange{}, fmt.Errorf("service node port range %q is not of the form 30000-32767", s)
	}
	if a < 1 || b > 65535 || a > b {
		return PortRange{}, fmt.Errorf("service node port range %q must be ports from 1 to 65535, the first not above the last", s)
	}
	return PortRange{Base: a, Size: b - a + 1}, nil
}

func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

func (r PortRange) offset(port int32) (int, bool) {
	i := int(port) - r.Base
	return i, i >= 0 && i < r.Size
}
