package ratelimit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// KeyFunc returns the identifier a request is limited by. It must not
// return an empty identifier; it returns an error wrapping ErrNoKey when
// there is none. (The middleware treats ("", nil) like ErrNoKey.)
type KeyFunc func(r *http.Request) (string, error)

// defaultIPv6Bits is the prefix length ClientIP groups IPv6 clients by. A
// subscriber or a cloud VM is usually given at least a /64 and can
// pick any address in it, so limiting per address (/128) would let one
// client rotate addresses and never be limited.
const defaultIPv6Bits = 64

// ClientIP keys requests by client IP address: an IPv4 address as itself
// ("192.0.2.7"), an IPv6 address by its /64 network,
// written as a prefix ("2001:db8:1:2::/64"); IPv4-mapped IPv6 addresses
// (::ffff:192.0.2.7) count as IPv4, and zones (%eth0) are dropped. Use
// ClientIPPrefix for another IPv6 grouping.
//
// By default the client is the TCP peer (Request.RemoteAddr) and proxy
// headers are ignored, since any client can send them. Behind reverse
// proxies, list their address ranges in trusted: when the peer is trusted,
// X-Forwarded-For (all its header lines, in order, as one list; entries may
// carry a port, "ip:port" or "[ipv6]:port") is read from right to left and
// the first address that is not trusted is the client. Entries left of it
// were written by the client and are ignored, so prepending spoofed entries
// gains nothing. If every entry is trusted, the leftmost is the client; an
// unparsable entry reached in the walk is ErrNoKey (a proxy misconfiguration
// the OnError hook should see). Only X-Forwarded-For is read, never
// Forwarded or X-Real-IP, and only through trusted peers. Trusted prefixes
// given as IPv4-mapped IPv6 are unmapped like the addresses.
func ClientIP(trusted ...netip.Prefix) KeyFunc {
	f, _ := ClientIPPrefix(defaultIPv6Bits, trusted...)
	return f
}

// ClientIPPrefix is ClientIP grouping IPv6 clients by their first ipv6Bits
// bits instead of 64: 128 limits every IPv6 address apart (keyed as the
// bare address), 56 or 48 a whole site. IPv4 addresses are always keyed
// one by one. It fails with ErrInvalid unless 1 <= ipv6Bits <= 128.
func ClientIPPrefix(ipv6Bits int, trusted ...netip.Prefix) (KeyFunc, error) {
	if ipv6Bits < 1 || ipv6Bits > 128 {
		return nil, pkg.Invalidf("client ip prefix", "IPv6 prefix length %d outside 1..128", ipv6Bits)
	}
	var ts []netip.Prefix
	for _, p := range trusted {
		if !p.IsValid() {
			continue // contains nothing
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		ts = append(ts, p.Masked())
	}
	c := clientIP{trusted: ts, v6Bits: ipv6Bits}
	return c.key, nil
}

type clientIP struct {
	trusted []netip.Prefix
	v6Bits  int
}

func (c clientIP) isTrusted(a netip.Addr) bool {
	for _, p := range c.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (c clientIP) key(r *http.Request) (string, error) {
	client, err := parseAddr(r.RemoteAddr)
	if err != nil {
		return "", fmt.Errorf("%w: remote address %q", ErrNoKey, r.RemoteAddr)
	}
	if len(c.trusted) > 0 && c.isTrusted(client) {
		if client, err = c.forwarded(r.Header.Values("X-Forwarded-For"), client); err != nil {
			return "", err
		}
	}
	if client.Is4() || c.v6Bits == 128 {
		return client.String(), nil
	}
	p, err := client.Prefix(c.v6Bits)
	if err != nil { // not reached: client is a valid IPv6 address
		return "", fmt.Errorf("%w: %v", ErrNoKey, err)
	}
	return p.String(), nil
}

// forwarded walks the X-Forwarded-For list from the right, without
// splitting it into a slice, and returns the first untrusted address, else
// the leftmost one, else peer. Empty list members are skipped (RFC 9110
// §5.6.1).
func (c clientIP) forwarded(lines []string, peer netip.Addr) (netip.Addr, error) {
	client := peer
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for rest != "" {
			entry := rest
			if j := strings.LastIndexByte(rest, ','); j >= 0 {
				entry, rest = rest[j+1:], rest[:j]
			} else {
				rest = ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			a, err := parseAddr(entry)
			if err != nil {
				return netip.Addr{}, fmt.Errorf("%w: X-Forwarded-For entry %q", ErrNoKey, entry)
			}
			client = a
			if !c.isTrusted(a) {
				return client, nil
			}
		}
	}
	return client, nil
}

// parseAddr accepts "ip", "[ipv6]", "ip:port" and "[ipv6]:port", and
// returns the address unmapped (::ffff:192.0.2.1 is 192.0.2.1) and without
// a zone.
func parseAddr(s string) (netip.Addr, error) {
	var a netip.Addr
	if ap, err := netip.ParseAddrPort(s); err == nil {
		a = ap.Addr()
	} else {
		if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
			s = s[1 : len(s)-1]
		}
		if a, err = netip.ParseAddr(s); err != nil {
			return netip.Addr{}, err
		}
	}
	return a.Unmap().WithZone(""), nil
}

// Header keys requests by a hash of the value of a header, such as an API
// key ("X-API-Key"). A missing or blank header, or one sent more than once,
// is ErrNoKey.
//
// The value is whatever the client sends, so Header alone is no limit:
// a client that sends a fresh value with each request gets a fresh budget
// each time, and every new value costs Redis keys (until their TTL) — an
// attacker can spend your memory. Authenticate first: reject unknown keys
// (401) in a handler in front of the middleware, and prefer a KeyFunc that
// returns the verified key's ID (from the request context, say) over the
// secret itself. Never limit on an unverified secret.
//
// The identifier is HashID(value) — 32 hex digits of the SHA-256 of the
// trimmed value — so a secret never lands in Redis key names, in errors or
// in logs. Use HashID to reach that identifier's state from elsewhere
// (Reset, Block, SetConfig).
func Header(name string) KeyFunc {
	name = http.CanonicalHeaderKey(name)
	return func(r *http.Request) (string, error) {
		vs := r.Header[name]
		if len(vs) > 1 {
			return "", fmt.Errorf("%w: header %s sent %d times", ErrNoKey, name, len(vs))
		}
		if len(vs) == 0 || strings.TrimSpace(vs[0]) == "" {
			return "", fmt.Errorf("%w: header %s missing", ErrNoKey, name)
		}
		return HashID(strings.TrimSpace(vs[0])), nil
	}
}

// HashID returns the identifier Header derives from a header value: the
// first 16 bytes (128 bits) of its SHA-256, in lowercase hex. It does not
// trim the value; Header does that first.
func HashID(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:16])
}
