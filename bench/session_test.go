package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alexedwards/scs/goredisstore"
	"github.com/alexedwards/scs/v2"
	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/bench/benchutil"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

// The same session content for every layout: seed 001's example values.
const (
	sessUsers       = 200 // users; sessions per user = sessPerUser
	sessPerUser     = 5
	sessParallelism = 8 // goroutines per GOMAXPROCS, same for every contender
	sessEmail       = "admin@zentoria.local"
	sessIP          = "192.168.1.100"
	sessUA          = "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0"
	sessFP          = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
	sessRTH         = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// seedSessionID is a session ID as the seed's application draws it: 128
// random bits, in the same 22 characters as redschema's IDs, so that both
// layouts hold keys of one size.
func seedSessionID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

func sessUserID(i int) string { return fmt.Sprintf("3f1c2a9e-7b4d-4c8e-9a1f-%012d", i) }

func sessInfo(u string) session.Info {
	return session.Info{UserID: u, Email: sessEmail, IPAddress: sessIP, UserAgent: sessUA, DeviceFingerprint: sessFP}
}

type sessRef struct{ user, id string }

// seedSessionKey and seedIndexKey are seed 001's layout as the seed
// documents it (no hash tags, a plain set index without TTL).
var (
	seedSessionKey = keys.MustCompile(keys.Pattern{Template: "session:user:{user_id}:{session_id}", Type: keys.Hash, TTL: time.Hour, Owner: "bench-seed"})
	seedIndexKey   = keys.MustCompile(keys.Pattern{Template: "session:index:{user_id}", Type: keys.Set, Persistent: "seed: managed by cleanup", Owner: "bench-seed"})
	seedRevokedKey = keys.MustCompile(keys.Pattern{Template: "session:blacklist:{token_jti}", Type: keys.String, TTLNote: "the token's remaining validity", Owner: "bench-seed"})
)

// seedCreate writes a session the way seed 001 describes: HSET of the eight
// fields, EXPIRE 3600, SADD to the index; pipelined (one round trip, not
// atomic).
func seedCreate(ctx context.Context, c redis.UniversalClient, ns keys.Namespace, u, sid string) error {
	k, _ := seedSessionKey.Key(ns, u, sid)
	idx, _ := seedIndexKey.Key(ns, u)
	now := time.Now().UTC().Format(time.RFC3339)
	_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k, "user_id", u, "email", sessEmail, "created_at", now, "last_activity", now,
			"ip_address", sessIP, "user_agent", sessUA, "device_fingerprint", sessFP, "refresh_token_hash", sessRTH)
		p.Expire(ctx, k, time.Hour)
		p.SAdd(ctx, idx, sid)
		return nil
	})
	return err
}

func newSessStore(b *testing.B, e *benchutil.Env) *session.Store {
	s, err := session.New(e.Client, session.WithNamespace(e.NS))
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func newSCS(e *benchutil.Env) (*scs.SessionManager, bool) {
	c, ok := e.Client.(*redis.Client)
	if !ok {
		return nil, false // goredisstore takes a *redis.Client only
	}
	sm := scs.New()
	sm.Store = goredisstore.NewWithPrefix(c, e.NS.Prefix+"scs:")
	sm.IdleTimeout = time.Hour
	sm.Lifetime = 24 * time.Hour
	return sm, true
}

func scsCreate(ctx context.Context, sm *scs.SessionManager, u string) (string, error) {
	sctx, err := sm.Load(ctx, "")
	if err != nil {
		return "", err
	}
	now := time.Now().UTC().Format(time.RFC3339)
	for _, kv := range [][2]string{{"user_id", u}, {"email", sessEmail}, {"created_at", now}, {"last_activity", now},
		{"ip_address", sessIP}, {"user_agent", sessUA}, {"device_fingerprint", sessFP}, {"refresh_token_hash", sessRTH}} {
		sm.Put(sctx, kv[0], kv[1])
	}
	tok, _, err := sm.Commit(sctx)
	return tok, err
}

// runParallel runs op over the refs from sessParallelism*GOMAXPROCS
// goroutines and reports trips/op.
func runParallel(b *testing.B, e *benchutil.Env, n int, op func(ctx context.Context, i int) error) {
	ctx := context.Background()
	var next atomic.Int64
	e.Warm(b)
	b.ReportAllocs()
	b.SetParallelism(sessParallelism)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := op(ctx, int(next.Add(1))%n); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.StopTimer()
	e.ReportTrips(b)
}

// BenchmarkSession compares, at the same concurrency:
//   - Get: redschema's Get (load + slide, one script) with seed 001's own
//     commands (HGETALL + HSET last_activity + EXPIRE), pipelined and not;
//   - LoadSave: a request cycle that loads the session and saves it with a
//     new idle deadline, against alexedwards/scs with goredisstore;
//   - Create: a new session with the seed's eight fields.
func BenchmarkSession(b *testing.B) {
	b.Run("Get/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		s := newSessStore(b, e)
		refs := createRefs(b, e, func(ctx context.Context, u string) (string, error) {
			sess, _, err := s.Create(ctx, sessInfo(u))
			if err != nil {
				return "", err
			}
			return sess.ID, nil
		})
		runParallel(b, e, len(refs), func(ctx context.Context, i int) error {
			_, err := s.Get(ctx, refs[i].user, refs[i].id)
			return err
		})
	})
	for _, pipelined := range []bool{true, false} {
		name := "Get/seed-pipelined"
		if !pipelined {
			name = "Get/seed-3-trips"
		}
		b.Run(name, func(b *testing.B) {
			e := benchutil.New(b)
			refs := createRefs(b, e, func(ctx context.Context, u string) (string, error) {
				sid, err := seedSessionID()
				if err != nil {
					return "", err
				}
				return sid, seedCreate(ctx, e.Client, e.NS, u, sid)
			})
			runParallel(b, e, len(refs), func(ctx context.Context, i int) error {
				k, _ := seedSessionKey.Key(e.NS, refs[i].user, refs[i].id)
				now := time.Now().UTC().Format(time.RFC3339)
				if pipelined {
					_, err := e.Client.Pipelined(ctx, func(p redis.Pipeliner) error {
						p.HGetAll(ctx, k)
						p.HSet(ctx, k, "last_activity", now)
						p.Expire(ctx, k, time.Hour)
						return nil
					})
					return err
				}
				if err := e.Client.HGetAll(ctx, k).Err(); err != nil {
					return err
				}
				if err := e.Client.HSet(ctx, k, "last_activity", now).Err(); err != nil {
					return err
				}
				return e.Client.Expire(ctx, k, time.Hour).Err()
			})
		})
	}
	b.Run("LoadSave/redschema-Get", func(b *testing.B) {
		e := benchutil.New(b)
		s := newSessStore(b, e)
		refs := createRefs(b, e, func(ctx context.Context, u string) (string, error) {
			sess, _, err := s.Create(ctx, sessInfo(u))
			if err != nil {
				return "", err
			}
			return sess.ID, nil
		})
		runParallel(b, e, len(refs), func(ctx context.Context, i int) error {
			_, err := s.Get(ctx, refs[i].user, refs[i].id)
			return err
		})
	})
	b.Run("LoadSave/redschema-Get+Update", func(b *testing.B) {
		e := benchutil.New(b)
		s := newSessStore(b, e)
		refs := createRefs(b, e, func(ctx context.Context, u string) (string, error) {
			sess, _, err := s.Create(ctx, sessInfo(u))
			if err != nil {
				return "", err
			}
			return sess.ID, nil
		})
		set := session.Changes{Set: map[string]string{"cart": "3"}}
		runParallel(b, e, len(refs), func(ctx context.Context, i int) error {
			if _, err := s.Get(ctx, refs[i].user, refs[i].id); err != nil {
				return err
			}
			return s.Update(ctx, refs[i].user, refs[i].id, set)
		})
	})
	b.Run("LoadSave/scs-goredisstore", func(b *testing.B) {
		e := benchutil.New(b)
		sm, ok := newSCS(e)
		if !ok {
			b.Skip("scs goredisstore needs a *redis.Client (no cluster)")
		}
		refs := createRefs(b, e, func(ctx context.Context, u string) (string, error) { return scsCreate(ctx, sm, u) })
		runParallel(b, e, len(refs), func(ctx context.Context, i int) error {
			sctx, err := sm.Load(ctx, refs[i].id)
			if err != nil {
				return err
			}
			if sm.GetString(sctx, "user_id") == "" {
				return fmt.Errorf("scs: session %d not found", i)
			}
			sm.Put(sctx, "last_activity", time.Now().UTC().Format(time.RFC3339))
			_, _, err = sm.Commit(sctx)
			return err
		})
	})
	b.Run("Create/redschema", func(b *testing.B) {
		e := benchutil.New(b)
		s := newSessStore(b, e)
		runParallel(b, e, sessUsers, func(ctx context.Context, i int) error {
			_, _, err := s.Create(ctx, sessInfo(sessUserID(i)))
			return err
		})
	})
	b.Run("Create/seed-pipelined", func(b *testing.B) {
		e := benchutil.New(b)
		runParallel(b, e, sessUsers, func(ctx context.Context, i int) error {
			sid, err := seedSessionID()
			if err != nil {
				return err
			}
			return seedCreate(ctx, e.Client, e.NS, sessUserID(i), sid)
		})
	})
	b.Run("Create/scs-goredisstore", func(b *testing.B) {
		e := benchutil.New(b)
		sm, ok := newSCS(e)
		if !ok {
			b.Skip("scs goredisstore needs a *redis.Client (no cluster)")
		}
		runParallel(b, e, sessUsers, func(ctx context.Context, i int) error {
			_, err := scsCreate(ctx, sm, sessUserID(i))
			return err
		})
	})
}

// sessTokens is how many JWT IDs BenchmarkSessionIsRevoked checks; one in
// ten is revoked.
const sessTokens = 1000

// BenchmarkSessionIsRevoked checks JWT IDs against the blacklist, at
// BenchmarkSession's concurrency: redschema's IsRevoked against seed
// 001's own command, a GET of session:blacklist:{token_jti} per check.
func BenchmarkSessionIsRevoked(b *testing.B) {
	jti := func(i int) string { return "jti-" + strconv.Itoa(i) }
	setup := func(b *testing.B) (*benchutil.Env, *session.Store) {
		e := benchutil.New(b)
		s := newSessStore(b, e)
		for i := 0; i < sessTokens; i += 10 {
			if _, err := s.RevokeToken(context.Background(), jti(i), time.Now().Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
		return e, s
	}
	b.Run("redschema", func(b *testing.B) {
		e, s := setup(b)
		runParallel(b, e, sessTokens, func(ctx context.Context, i int) error {
			_, err := s.IsRevoked(ctx, jti(i))
			return err
		})
	})
	b.Run("seed-get", func(b *testing.B) {
		e, _ := setup(b)
		runParallel(b, e, sessTokens, func(ctx context.Context, i int) error {
			k, err := seedRevokedKey.Key(e.NS, jti(i))
			if err != nil {
				return err
			}
			err = e.Client.Get(ctx, k).Err()
			if errors.Is(err, redis.Nil) {
				err = nil
			}
			return err
		})
	})
}

// createRefs makes sessUsers*sessPerUser sessions with create, untimed.
func createRefs(b *testing.B, e *benchutil.Env, create func(ctx context.Context, u string) (string, error)) []sessRef {
	b.Helper()
	ctx := context.Background()
	refs := make([]sessRef, 0, sessUsers*sessPerUser)
	for u := 0; u < sessUsers; u++ {
		for j := 0; j < sessPerUser; j++ {
			id, err := create(ctx, sessUserID(u))
			if err != nil {
				b.Fatal(err)
			}
			refs = append(refs, sessRef{sessUserID(u), id})
		}
	}
	return refs
}

var sessMemory sync.Map // name -> [2]float64{bytes/session, keys/session}

// BenchmarkSessionMemory reports Redis bytes per session (MEMORY USAGE of
// every key, index included) for 1000 sessions, one per user and five per
// user, in each layout. The timed loop is empty: only the metrics matter.
func BenchmarkSessionMemory(b *testing.B) {
	layouts := []struct {
		name   string
		create func(b *testing.B, e *benchutil.Env) func(ctx context.Context, u string) error
	}{
		{"redschema", func(b *testing.B, e *benchutil.Env) func(ctx context.Context, u string) error {
			s := newSessStore(b, e)
			return func(ctx context.Context, u string) error { _, _, err := s.Create(ctx, sessInfo(u)); return err }
		}},
		{"seed", func(b *testing.B, e *benchutil.Env) func(ctx context.Context, u string) error {
			return func(ctx context.Context, u string) error {
				sid, err := seedSessionID()
				if err != nil {
					return err
				}
				return seedCreate(ctx, e.Client, e.NS, u, sid)
			}
		}},
		{"scs-goredisstore", func(b *testing.B, e *benchutil.Env) func(ctx context.Context, u string) error {
			sm, ok := newSCS(e)
			if !ok {
				b.Skip("scs goredisstore needs a *redis.Client (no cluster)")
			}
			return func(ctx context.Context, u string) error { _, err := scsCreate(ctx, sm, u); return err }
		}},
	}
	for _, perUser := range []int{1, 5} {
		for _, l := range layouts {
			name := fmt.Sprintf("%s/%d-per-user", l.name, perUser)
			b.Run(name, func(b *testing.B) {
				m, ok := sessMemory.Load(name)
				if !ok {
					e := benchutil.New(b)
					create := l.create(b, e)
					ctx := context.Background()
					const total = 1000
					for i := 0; i < total; i++ {
						if err := create(ctx, sessUserID(i/perUser)); err != nil {
							b.Fatal(err)
						}
					}
					bytes, n, err := benchutil.MemoryUnder(ctx, e.Client, e.NS.Prefix)
					if err != nil {
						b.Fatal(err)
					}
					m = [2]float64{float64(bytes) / total, float64(n) / total}
					sessMemory.Store(name, m)
				}
				for i := 0; i < b.N; i++ {
				}
				v := m.([2]float64)
				b.ReportMetric(v[0], "B/session")
				b.ReportMetric(v[1], "keys/session")
			})
		}
	}
}
