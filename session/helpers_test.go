package session

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// mustCreate creates a session for userID and returns it with its refresh
// token.
func mustCreate(t *testing.T, e *harness.Env, s *Store, userID string) (*Session, string) {
	t.Helper()
	sess, tok := mustCreateTokens(t, e, s, userID)
	return sess, tok.Refresh
}

// mustCreateTokens creates a session for userID and returns it with its
// tokens.
func mustCreateTokens(t *testing.T, e *harness.Env, s *Store, userID string) (*Session, Tokens) {
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

// dataKeys returns the keys under the test's namespace except request
// keys, which record a call's outcome for replayWindow and then expire.
func dataKeys(t *testing.T, e *harness.Env) []string {
	t.Helper()
	var out []string
	for _, k := range e.Keys() {
		if _, err := requestKey.Parse(e.NS, k); err == nil {
			continue
		}
		out = append(out, k)
	}
	return out
}

// createConcurrently creates workers*each sessions for userID from workers
// goroutines and returns their IDs.
func createConcurrently(t *testing.T, e *harness.Env, s *Store, userID string, workers, each int) []string {
	t.Helper()
	var mu sync.Mutex
	var ids []string
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				sess, _, err := s.Create(e.Ctx(), Info{UserID: userID})
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				ids = append(ids, sess.ID)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return ids
}
