package ratelimit_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/ratelimit"
)

func request(remote string, xff ...string) *http.Request {
	r := httptest.NewRequest("GET", "/", nil)
	r.RemoteAddr = remote
	for _, v := range xff {
		r.Header.Add("X-Forwarded-For", v)
	}
	return r
}

func TestClientIP(t *testing.T) {
	trusted := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("2001:db8:ffff::/48"),
	}
	cases := []struct {
		name    string
		trusted bool
		remote  string
		xff     []string
		want    string
	}{
		{"ipv4 peer", false, "192.0.2.7:5555", nil, "192.0.2.7"},
		{"ipv4 peer without port", false, "192.0.2.7", nil, "192.0.2.7"},
		{"ipv6 peer keyed by /64", false, "[2001:db8:1:2::1]:443", nil, "2001:db8:1:2::/64"},
		{"same /64, other address", false, "[2001:db8:1:2:dead:beef:0:9]:1", nil, "2001:db8:1:2::/64"},
		{"next /64", false, "[2001:db8:1:3::1]:443", nil, "2001:db8:1:3::/64"},
		{"ipv6 peer without port", false, "2001:db8:1:2::7", nil, "2001:db8:1:2::/64"},
		{"ipv4-mapped peer", false, "[::ffff:192.0.2.9]:1", nil, "192.0.2.9"},
		{"zone dropped (ip:port)", false, "[fe80::1%eth0]:1", nil, "fe80::/64"},
		{"zone dropped (bare)", false, "fe80::1%eth0", nil, "fe80::/64"},
		{"loopback v6", false, "[::1]:80", nil, "::/64"},

		{"headers ignored without trusted proxies", false, "10.0.0.1:5555", []string{"198.51.100.1"}, "10.0.0.1"},
		{"untrusted peer's header ignored", true, "192.0.2.7:1", []string{"198.51.100.1"}, "192.0.2.7"},
		{"one proxy", true, "10.0.0.1:1", []string{"198.51.100.1"}, "198.51.100.1"},
		{"spoofed left entries ignored", true, "10.0.0.1:1", []string{"6.6.6.6, 7.7.7.7, 198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"spoofed junk left of the client ignored", true, "10.0.0.1:1", []string{"not-an-ip, 198.51.100.1"}, "198.51.100.1"},
		{"several header lines", true, "10.0.0.1:1", []string{"6.6.6.6, 198.51.100.1", "10.0.0.3, 10.0.0.2"}, "198.51.100.1"},
		{"client in a later line", true, "10.0.0.1:1", []string{"6.6.6.6", "198.51.100.1, 10.0.0.2"}, "198.51.100.1"},
		{"entries with ports", true, "10.0.0.1:1", []string{"6.6.6.6:1, 198.51.100.1:4711, 10.0.0.2:80"}, "198.51.100.1"},
		{"ipv6 entry with port", true, "[::1]:1", []string{"[2001:db8:5:6::1]:443"}, "2001:db8:5:6::/64"},
		{"ipv6 entry bracketed", true, "[::1]:1", []string{"[2001:db8:5:6::1]"}, "2001:db8:5:6::/64"},
		{"ipv6 entry bare", true, "[::1]:1", []string{"2001:db8:5:6::2"}, "2001:db8:5:6::/64"},
		{"ipv6 proxy chain", true, "[2001:db8:ffff::1]:1", []string{"2001:db8:5:6::2, 2001:db8:ffff::9"}, "2001:db8:5:6::/64"},
		{"mapped entry", true, "10.0.0.1:1", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"mapped trusted proxy", true, "[::ffff:10.0.0.1]:1", []string{"198.51.100.1, ::ffff:10.0.0.2"}, "198.51.100.1"},
		{"zoned entry", true, "10.0.0.1:1", []string{"fe80::1%eth0"}, "fe80::/64"},
		{"empty members skipped", true, "10.0.0.1:1", []string{"198.51.100.1,, ", " ,10.0.0.2,"}, "198.51.100.1"},
		{"no header from a trusted peer", true, "10.0.0.1:1", nil, "10.0.0.1"},
		{"every hop trusted: leftmost", true, "[::1]:1", []string{"10.1.1.1, 10.0.0.2"}, "10.1.1.1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := ratelimit.ClientIP()
			if c.trusted {
				f = ratelimit.ClientIP(trusted...)
			}
			got, err := f(request(c.remote, c.xff...))
			require.NoError(t, err)
			require.Equal(t, c.want, got)
		})
	}
}

func TestClientIPIgnoresOtherProxyHeaders(t *testing.T) {
	for _, f := range []ratelimit.KeyFunc{ratelimit.ClientIP(), ratelimit.ClientIP(netip.MustParsePrefix("10.0.0.0/8"))} {
		r := request("10.0.0.1:1")
		r.Header.Set("X-Real-IP", "198.51.100.1")
		r.Header.Set("Forwarded", "for=198.51.100.1")
		r.Header.Set("True-Client-IP", "198.51.100.1")
		got, err := f(r)
		require.NoError(t, err)
		require.Equal(t, "10.0.0.1", got)
	}
}

func TestClientIPSpoofingGainsNothing(t *testing.T) {
	f := ratelimit.ClientIP(netip.MustParsePrefix("10.0.0.0/8"))
	seen := map[string]bool{}
	for _, spoof := range []string{"", "1.2.3.4, ", "5.6.7.8, 9.9.9.9, ", "2001:db8::1, "} {
		got, err := f(request("10.0.0.1:1", spoof+"198.51.100.1"))
		require.NoError(t, err)
		seen[got] = true
	}
	require.Equal(t, map[string]bool{"198.51.100.1": true}, seen)
}

func TestClientIPPrefix(t *testing.T) {
	for _, bits := range []int{-1, 0, 129} {
		_, err := ratelimit.ClientIPPrefix(bits)
		require.ErrorIs(t, err, ratelimit.ErrInvalid, "bits %d", bits)
	}
	for _, c := range []struct {
		bits         int
		remote, want string
	}{
		{128, "[2001:db8:1:2::1]:1", "2001:db8:1:2::1"},
		{128, "[fe80::1%eth0]:1", "fe80::1"},
		{56, "[2001:db8:1:2ff::1]:1", "2001:db8:1:200::/56"},
		{48, "[2001:db8:1:2::1]:1", "2001:db8:1::/48"},
		{48, "192.0.2.7:1", "192.0.2.7"},
		{48, "[::ffff:192.0.2.7]:1", "192.0.2.7"},
	} {
		f, err := ratelimit.ClientIPPrefix(c.bits)
		require.NoError(t, err)
		got, err := f(request(c.remote))
		require.NoError(t, err)
		require.Equal(t, c.want, got, "/%d %s", c.bits, c.remote)
	}
	// Trusted prefixes written as IPv4-mapped IPv6 match IPv4 peers.
	got, err := ratelimit.ClientIP(netip.MustParsePrefix("::ffff:10.0.0.0/104"))(request("10.0.0.1:1", "198.51.100.1"))
	require.NoError(t, err)
	require.Equal(t, "198.51.100.1", got)

	f, err := ratelimit.ClientIPPrefix(128, netip.MustParsePrefix("10.0.0.0/8"))
	require.NoError(t, err)
	got, err = f(request("10.0.0.1:1", "2001:db8::1:2, 10.0.0.5"))
	require.NoError(t, err)
	require.Equal(t, "2001:db8::1:2", got)
}

func TestClientIPErrors(t *testing.T) {
	trusted := ratelimit.ClientIP(netip.MustParsePrefix("10.0.0.0/8"))
	for _, c := range []struct {
		f      ratelimit.KeyFunc
		remote string
		xff    []string
	}{
		{trusted, "10.0.0.1:1", []string{"junk"}},
		{trusted, "10.0.0.1:1", []string{"198.51.100.1, junk, 10.0.0.2"}},
		{trusted, "10.0.0.1:1", []string{"198.51.100.1:notaport"}},
		{ratelimit.ClientIP(), "pipe", nil},
		{ratelimit.ClientIP(), "", nil},
		{ratelimit.ClientIP(), "@", nil},
	} {
		_, err := c.f(request(c.remote, c.xff...))
		require.ErrorIs(t, err, ratelimit.ErrNoKey, "%q %q", c.remote, c.xff)
	}
}

func TestHeader(t *testing.T) {
	const secret = "sk_live_0123456789abcdef"
	f := ratelimit.Header("x-api-key")
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-API-Key", "  "+secret+" ")
	got, err := f(r)
	require.NoError(t, err)
	require.Equal(t, ratelimit.HashID(secret), got)
	require.Len(t, got, 32)
	require.NotContains(t, got, secret)
	// SHA-256("abc") starts ba7816bf8f01cfea414140de5dae2223.
	require.Equal(t, "ba7816bf8f01cfea414140de5dae2223", ratelimit.HashID("abc"))

	r.Header.Set("X-API-Key", "other")
	other, err := f(r)
	require.NoError(t, err)
	require.NotEqual(t, got, other)

	for _, vs := range [][]string{nil, {""}, {"   "}, {secret, "other"}} {
		r := httptest.NewRequest("GET", "/", nil)
		for _, v := range vs {
			r.Header.Add("X-API-Key", v)
		}
		_, err := f(r)
		require.ErrorIs(t, err, ratelimit.ErrNoKey, "%q", vs)
		require.False(t, strings.Contains(err.Error(), secret), "error leaks the value: %v", err)
	}
}
