package ratelimit

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ErrNoKey is returned by a KeyFunc when the request carries no usable
// identifier (no API key header, an unparsable client address). The
// middleware answers such requests with 400 Bad Request.
var ErrNoKey = errors.New("ratelimit: no rate-limit key in request")

// KeyFunc returns the identifier a request is limited by. It must not
// return an empty identifier; it returns an error wrapping ErrNoKey when
// there is none.
type KeyFunc func(r *http.Request) (string, error)

// ClientIP keys requests by client IP address (IPv4-mapped IPv6 addresses
// are unmapped). By default that is the TCP peer (Request.RemoteAddr) and
// proxy headers are ignored, since any client can send them.
//
// Behind reverse proxies, list their address ranges in trusted: when the
// peer is trusted, X-Forwarded-For is read from right to left and the first
// address that is not trusted is the client (the rightmost-untrusted rule,
// which a client cannot spoof by prepending entries). If every hop is
// trusted, the leftmost is used.
func ClientIP(trusted ...netip.Prefix) KeyFunc {
	trusted = append([]netip.Prefix(nil), trusted...)
	isTrusted := func(a netip.Addr) bool {
		for _, p := range trusted {
			if p.Contains(a) {
				return true
			}
		}
		return false
	}
	return func(r *http.Request) (string, error) {
		peer, err := parseAddr(r.RemoteAddr)
		if err != nil {
			return "", fmt.Errorf("%w: remote address %q", ErrNoKey, r.RemoteAddr)
		}
		if len(trusted) == 0 || !isTrusted(peer) {
			return peer.String(), nil
		}
		var hops []string
		for _, v := range r.Header.Values("X-Forwarded-For") {
			hops = append(hops, strings.Split(v, ",")...)
		}
		client := peer
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := parseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				return "", fmt.Errorf("%w: X-Forwarded-For entry %q", ErrNoKey, hops[i])
			}
			client = a
			if !isTrusted(a) {
				break
			}
		}
		return client.String(), nil
	}
}

// parseAddr accepts "ip", "ip:port" and "[ipv6]:port".
func parseAddr(s string) (netip.Addr, error) {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), nil
	}
	a, err := netip.ParseAddr(strings.Trim(s, "[]"))
	if err != nil {
		return netip.Addr{}, err
	}
	return a.Unmap().WithZone(""), nil
}

// Header keys requests by the value of a header, such as an API key ID
// ("X-API-Key"). A missing or blank header is ErrNoKey.
func Header(name string) KeyFunc {
	return func(r *http.Request) (string, error) {
		v := strings.TrimSpace(r.Header.Get(name))
		if v == "" {
			return "", fmt.Errorf("%w: header %s missing", ErrNoKey, name)
		}
		return v, nil
	}
}
