package session

import (
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
)

// Store keeps sessions: one hash per session and a per-user index. It is
// safe for concurrent use. Its methods name a session by user ID and
// session ID (Session.ID, Entry.ID, or what ParseHandle returns for a
// client's handle); the handle itself never reaches Redis.
//
// Every method that talks to Redis is one round trip (one Lua script or
// one command) and atomic; the keys of one call share the user_id hash
// tag, so they are cluster-safe. The exceptions are Authenticate with
// hash tags turned off and Devices, two round trips each, and the
// lifecycle-event machinery: Sweep (two pipelines) and EventReader (one
// XREAD, or one pipeline on a cluster); see there.
// Times are read from the server (TIME) inside the scripts.
type Store struct {
	run *call.Runner
	opt options
	// The script arguments every call passes, boxed once.
	idleArg, lifeArg, maxArg any
	// With events: the stream length and the index grace (ms).
	evLen, evGrace any
	sweepLoaded    atomic.Bool
}

// New returns a Store over client. It fails with ErrInvalid on a nil
// client, a go-redis client without ContextTimeoutEnabled (it would ignore
// every call's deadline), a bad namespace or a bad option; it does not
// contact Redis.
func New(client redis.UniversalClient, opts ...Option) (*Store, error) {
	o, err := newOptions("new", client, opts)
	if err != nil {
		return nil, err
	}
	run := call.NewRunner(client, o.lanes)
	run.SetDurability(o.durable)
	return &Store{
		run:     run,
		opt:     o,
		idleArg: strconv.FormatInt(unit.MsFloor(o.idle), 10),
		lifeArg: strconv.FormatInt(unit.MsFloor(o.life), 10),
		maxArg:  strconv.Itoa(o.maxSessions),
		evLen:   strconv.Itoa(o.events),
		evGrace: strconv.FormatInt(unit.MsFloor(sweepWindow), 10),
	}, nil
}

// IdleTimeout returns the sliding idle timeout.
func (s *Store) IdleTimeout() time.Duration { return s.opt.idle }

// MaxLifetime returns the absolute lifetime cap.
func (s *Store) MaxLifetime() time.Duration { return s.opt.life }

// keyPair returns the session hash and the user's index.
func (s *Store) keyPair(op, userID, sessionID string) ([]string, error) {
	k, err := pkg.Key(op, sessionKey, s.opt.ns, userID, sessionID)
	if err != nil {
		return nil, err
	}
	idx, err := pkg.Key(op, indexKey, s.opt.ns, userID)
	if err != nil {
		return nil, err
	}
	return []string{k, idx}, nil
}
