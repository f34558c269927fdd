package session

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/internal/harness"
)

// newStore returns a Store on a fresh harness namespace.
func newStore(t *testing.T, opts ...Option) (*harness.Env, *Store) {
	t.Helper()
	e := harness.New(t)
	s, err := New(e.Client, append([]Option{WithNamespace(e.NS)}, opts...)...)
	require.NoError(t, err)
	return e, s
}

func mustCreate(t *testing.T, e *harness.Env, s *Store, userID string) (*Session, string) {
	t.Helper()
	sess, tok, err := s.Create(e.Ctx(), Info{UserID: userID, Email: userID + "@example.com", IPAddress: "192.168.1.100", UserAgent: "Mozilla/5.0", DeviceFingerprint: "fp"})
	require.NoError(t, err)
	return sess, tok
}

func sessKey(t *testing.T, e *harness.Env, userID, sid string) string {
	t.Helper()
	k, err := sessionKey.Key(e.NS, userID, sid)
	require.NoError(t, err)
	return k
}

func idxKey(t *testing.T, e *harness.Env, userID string) string {
	t.Helper()
	k, err := indexKey.Key(e.NS, userID)
	require.NoError(t, err)
	return k
}

// pttl returns the key's remaining TTL (negative when missing or none).
func pttl(t *testing.T, e *harness.Env, key string) time.Duration {
	t.Helper()
	d, err := e.Client.PTTL(e.Ctx(), key).Result()
	require.NoError(t, err)
	return d
}

func newEnvOnly(t *testing.T) *harness.Env { t.Helper(); return harness.New(t) }
