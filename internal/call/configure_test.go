package call_test

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/call"
)

type cfg struct{ n int }

type cfgOption func(*cfg)

// TestConfigure checks the constructor preamble: options applied in order
// over the defaults (nil ones skipped), then the client refused before the options are
// checked, then the check's verdict.
func TestConfigure(t *testing.T) {
	ok := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true})
	defer ok.Close()
	add := func(k int) cfgOption { return func(c *cfg) { c.n = c.n*10 + k } }
	var checked []string
	check := func(c *cfg, op string) error {
		checked = append(checked, op)
		if c.n > 100 {
			return pkg.Invalidf(op, "n %d", c.n)
		}
		return nil
	}

	c, err := call.Configure(pkg, "new", ok, cfg{n: 1}, []cfgOption{add(2), add(3)}, check)
	require.Error(t, err, "123 > 100")
	assert.ErrorIs(t, err, errInvalid)
	assert.Equal(t, 123, c.n)
	c, err = call.Configure(pkg, "new", ok, cfg{n: 1}, []cfgOption{nil, add(2), nil}, check)
	require.NoError(t, err, "nil options are skipped")
	assert.Equal(t, 12, c.n)
	assert.Equal(t, []string{"new", "new"}, checked)

	off := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer off.Close()
	for _, rdb := range []redis.UniversalClient{nil, off} {
		_, err = call.Configure(pkg, "open", rdb, cfg{}, []cfgOption(nil), check)
		assert.True(t, errors.Is(err, errInvalid), "%v", err)
	}
	assert.Len(t, checked, 2, "a bad client is refused before the options are checked")
}
