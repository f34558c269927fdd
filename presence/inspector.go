package presence

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Inspector reads presence for admin tools (the dashboard, the CLI):
// who is online, and one user's presence and connections, in one
// pipeline. It writes nothing and is safe for concurrent use; create one
// per process and namespace, and share it. Build it with NewInspector.
type Inspector struct {
	t *Tracker
}

// NewInspector returns an Inspector over rdb, built with New's options:
// WithNamespace, WithProfile, WithLayout and WithoutOnlineIndex shape what
// it reads (give it the Tracker's), the others are checked as New checks
// them and otherwise ignored. It fails as New does, with ErrInvalid; it
// does not contact Redis.
func NewInspector(rdb redis.UniversalClient, opts ...Option) (*Inspector, error) {
	t, err := newTracker("new inspector", rdb, opts)
	if err != nil {
		return nil, err
	}
	return &Inspector{t: t}, nil
}

// View is what an admin page shows of presence: who is online, and one
// user's presence and connections.
type View struct {
	// Online is OnlineNow's list, sorted; its length is OnlineCount.
	Online []string
	// User is Get(user), or nil when no user was asked for.
	User *Presence
	// Connections is Connections(user).
	Connections []Connection
}

// ReadView reads OnlineNow (which gives OnlineCount) and, for user other
// than "", Get(user) and Connections(user) together, as a Tracker with
// the Inspector's options reads them: one pipeline, so one round trip (one
// per node on a cluster: the online index has a key per slot, which
// touches every master) of a TIME, the online index's reads (one ZRANGE
// per cluster slot, as OnlineNow) and the user's reads, at OnlineNow's
// cost; the connections' script, when the server lost it (NOSCRIPT) or
// it met a slot migration, is sent again alone (one more round trip). An
// invalid user ID fails with ErrInvalid before anything is sent. A part
// that fails (the index WithoutOnlineIndex, say) is left empty and its
// error joined to the one returned, with the others read.
func (in *Inspector) ReadView(ctx context.Context, user string) (View, error) {
	t := in.t
	pipe := t.run.Client().Pipeline()
	done, err := t.queueView(ctx, pipe, user)
	if err != nil {
		return View{}, err
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	return done()
}

// queueView adds ReadView's reads to pipe, a pipeline of the Tracker's
// client, and returns what decodes them once pipe has been executed. An
// invalid user ID fails before anything is queued. The connections'
// script, when the server lost it (NOSCRIPT) or it met a slot migration,
// is sent again alone by the returned function.
func (t *Tracker) queueView(ctx context.Context, pipe redis.Pipeliner, user string) (func() (View, error), error) {
	const op = "read view"
	var k userKeys
	if user != "" {
		var err error
		if k, err = t.userKeys(op, user); err != nil {
			return nil, err
		}
	}
	clock := pipe.Time(ctx)
	index, err := t.queueIndex(ctx, pipe, op)
	if err != nil {
		return nil, err
	}
	var get *redis.StringCmd
	var score *redis.FloatCmd
	var conns func() (call.Reply, error)
	lastSeen := !t.opt.noIndex && t.opt.profile.Retention > 0 // as Get
	if user != "" {
		get = pipe.Get(ctx, k[0])
		if lastSeen {
			score = pipe.ZScore(ctx, k[2], user)
		}
		conns = t.run.Queue(ctx, pipe, call.Call{Op: connectionsOp, Keys: k[:3], Args: t.args(user, "", "")})
	}
	return func() (View, error) {
		var v View
		tm, err := clock.Result()
		if err != nil {
			return View{}, pkg.Wrap(ctx, op, "", err)
		}
		now := tm.UnixMilli()
		var errs [3]error
		if v.Online, errs[0] = index(now); errs[0] == nil {
			sort.Strings(v.Online)
		}
		if user == "" {
			return v, errs[0]
		}
		var scratch []byte
		if p, err := t.decodeGet(ctx, op, user, k[0], k[2], get, score, now, &scratch); err != nil {
			errs[1] = err
		} else {
			v.User = &p
		}
		rep, err := conns()
		if err == nil {
			key := k[1]
			if t.opt.layout == LayoutSingleKey {
				key = k[0]
			}
			v.Connections, err = decodeConns(op, key, &rep)
		}
		errs[2] = err
		return v, errors.Join(errs[:]...)
	}, nil
}

// queueIndex adds OnlineNow's reads of the online index to pipe and
// returns what lists the users online at the server time now (ms) once
// pipe has been executed, as OnlineNow does.
func (t *Tracker) queueIndex(ctx context.Context, pipe redis.Pipeliner, op string) (func(now int64) ([]string, error), error) {
	if t.opt.noIndex {
		return func(int64) ([]string, error) { return nil, pkg.Fail(op, "", ErrNoIndex, nil) }, nil
	}
	cmds := make([]*redis.ZSliceCmd, keys.SlotCount)
	ks := make([]string, keys.SlotCount)
	for s := range cmds {
		k, err := pkg.Key(op, onlineKey, t.opt.ns, keys.SlotTag(s))
		if err != nil {
			return nil, err
		}
		ks[s] = k
		cmds[s] = pipe.ZRangeWithScores(ctx, k, 0, -1)
	}
	return func(now int64) ([]string, error) {
		out := []string{}
		cut := float64(now)
		far := float64(unit.MsCeil(t.opt.profile.TTL) + latest(now) + 1)
		for i, c := range cmds {
			zs, err := c.Result()
			if err != nil {
				return nil, pkg.Wrap(ctx, op, ks[i], err)
			}
			for _, z := range zs {
				if math.Abs(z.Score) > far {
					return nil, pkg.Fail(op, ks[i], nil, keys.Corrupt(ks[i], fmt.Errorf("score %.0f past server time + TTL + %v", z.Score, maxClockSkew)))
				}
				if math.Floor(z.Score) <= cut { // expired, or announced offline (negative)
					continue
				}
				u, _ := z.Member.(string)
				if _, err := presenceKey.Key(keys.Namespace{}, u); err != nil { // not a user ID
					return nil, pkg.Fail(op, ks[i], nil, keys.Corrupt(ks[i], fmt.Errorf("member %.64q is not a user ID", u)))
				}
				out = append(out, u)
			}
		}
		return out, nil
	}, nil
}

// decodeGet decodes the presence of user from the GET of its presence
// key k and, when asked, the ZSCORE of its index key idx, as Get does
// (scratch: decode's buffer, reused across users).
func (t *Tracker) decodeGet(ctx context.Context, op, user, k, idx string, get *redis.StringCmd, score *redis.FloatCmd, now int64, scratch *[]byte) (Presence, error) {
	b, err := get.Bytes()
	if errors.Is(err, redis.Nil) {
		p := Presence{UserID: user, Status: Offline}
		if score != nil {
			if p.LastSeen, err = lastSeenOf(score, idx, float64(unit.MsCeil(t.opt.profile.TTL)), now); err != nil {
				return Presence{}, pkg.Wrap(ctx, op, idx, err)
			}
		}
		return p, nil
	}
	if err != nil {
		return Presence{}, pkg.Wrap(ctx, op, k, err)
	}
	p, err := decode(k, user, b, now, scratch)
	if err != nil {
		return Presence{}, pkg.Fail(op, k, nil, err)
	}
	return p, nil
}

// decodeConns decodes the connections script's reply, as Connections
// does.
func decodeConns(op, key string, rep *call.Reply) ([]Connection, error) {
	flat := rep.Strs(0)
	if err := rep.Err(); err != nil {
		return nil, err
	}
	if len(flat)%2 != 0 {
		return nil, pkg.Fail(op, key, nil, fmt.Errorf("odd connection list of %d", len(flat)))
	}
	out := make([]Connection, 0, len(flat)/2)
	for i := 0; i < len(flat); i += 2 {
		c, err := decodeConn(key, flat[i], flat[i+1])
		if err != nil {
			return nil, pkg.Fail(op, key, nil, err)
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}
