package presence

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Presence is a user's presence as stored, i.e. as the system sees it.
// Use Public for what other users may see.
type Presence struct {
	// UserID is the user.
	UserID string
	// Status is the stored status; Offline when the user has no presence
	// key (never seen, or the retention has passed).
	Status Status
	// LastSeen is the last heartbeat of any of the user's connections, or
	// when they went offline; zero when unknown.
	LastSeen time.Time
	// Connections is activeConnections (FormatDetailed; 0 for
	// FormatCompact).
	Connections int
	// Device and Activity are the presence metadata (FormatDetailed): the
	// device of the connection with the latest heartbeat, and
	// metadata.lastActivity (SetActivity, Conn.Activity).
	Device, Activity string
}

// Online reports whether the user is online for the system (Invisible
// included).
func (p Presence) Online() bool { return p.Status != Offline }

// Public returns the presence as other users may see it: an invisible user
// is offline, with no connections, device, activity or last seen shown (the
// stored LastSeen moves with every heartbeat, so showing it would tell
// others the user is online). Once the user really goes offline, the last
// seen kept for the retention is shown again.
func (p Presence) Public() Presence {
	if p.Status == Invisible {
		return Presence{UserID: p.UserID, Status: Offline}
	}
	return p
}

// wire is the union of the two presence formats.
type wire struct {
	UserID            string  `json:"userId"`
	Status            *Status `json:"status"`
	LastSeen          *int64  `json:"lastSeen"`
	ActiveConnections *int    `json:"activeConnections"`
	Metadata          *struct {
		Device       string `json:"device"`
		LastActivity string `json:"lastActivity"`
	} `json:"metadata"`
}

// connsMember starts the "connections" member of the single-key layout,
// which the scripts write last. Inside a JSON string every quote is escaped,
// so the text cannot occur in one.
var connsMember = []byte(`,"connections":`)

// latest is the bound of a stored time when the server's clock is now (ms):
// a time further ahead was not written by this package. A zero now (not
// known) bounds times to the year 9999.
func latest(now int64) int64 {
	if now <= 0 {
		return 253402300799999 // 9999-12-31T23:59:59.999Z
	}
	return now + unit.MsCeil(maxClockSkew)
}

// decode decodes a presence value read at server time now (Unix ms; 0 when
// unknown). scratch, if not nil, is a buffer reused across calls (data may
// be a Redis reply aliasing a string: it is never written).
func decode(key, user string, data []byte, now int64, scratch *[]byte) (Presence, error) {
	var w wire
	// Decode only the presence part when the value ends with the single-key
	// layout's connections, closed where they start: cutting a nested member
	// instead leaves unbalanced braces, which fails and falls back to the
	// whole value.
	cut := false
	if i := bytes.Index(data, connsMember); i >= 0 {
		var buf []byte
		if scratch != nil {
			buf = (*scratch)[:0]
		}
		buf = append(append(buf, data[:i]...), '}')
		if scratch != nil {
			*scratch = buf
		}
		cut = json.Unmarshal(buf, &w) == nil
	}
	if !cut {
		w = wire{}
		if err := json.Unmarshal(data, &w); err != nil {
			return Presence{}, keys.Corrupt(key, err)
		}
	}
	switch {
	case w.Status == nil || !w.Status.valid():
		return Presence{}, keys.Corrupt(key, errors.New("missing or unknown status"))
	case w.LastSeen == nil || *w.LastSeen < 0 || *w.LastSeen > latest(now):
		return Presence{}, keys.Corrupt(key, errors.New("lastSeen missing or not a time in [0, server time + 1h]"))
	case w.ActiveConnections != nil && *w.ActiveConnections < 0:
		return Presence{}, keys.Corrupt(key, fmt.Errorf("activeConnections %d", *w.ActiveConnections))
	}
	p := Presence{UserID: user, Status: *w.Status, LastSeen: fromMs(*w.LastSeen)}
	if w.ActiveConnections != nil {
		p.Connections = *w.ActiveConnections
		if p.Connections == 0 {
			// Readers of FormatDetailed require activeConnections > 0 to be
			// online.
			p.Status = Offline
		}
	}
	if w.Metadata != nil {
		p.Device, p.Activity = w.Metadata.Device, w.Metadata.LastActivity
	}
	if p.Status == Offline {
		p.Connections, p.Activity = 0, ""
	}
	return p, nil
}

// Get returns user's presence in one round trip (a GET of the presence key
// and a ZSCORE of the user's online-index shard, pipelined; both in the
// user's slot). A user with no presence key is Offline; their LastSeen is
// still known for the profile's Retention after their devices all stopped
// heartbeating without a Disconnect (from the index, unless the tracker is
// WithoutOnlineIndex, the Retention is zero or the user was Invisible; the
// index member goes on the next write to its shard after that, or with the
// shard, so it may be reported up to one TTL longer), else zero. Not found
// is not an error. With LayoutSingleKey the GET transfers the user's
// connections too (Presence does not carry them; only the part before them
// is decoded). A value this package did not write (bad JSON, an unknown
// status, a lastSeen that is missing, negative or more than an hour
// ahead of server time) gives an error matching keys.ErrCorrupt that names
// the key.
func (t *Tracker) Get(ctx context.Context, user string) (Presence, error) {
	ps, err := t.getMany(ctx, "get", []string{user}, true)
	if err != nil {
		return Presence{}, err
	}
	return ps[0], nil
}

// GetMany returns the presence of each user, in order, as Get does, with
// one pipeline (two commands per user and a TIME): one round trip on a
// single server; on a cluster go-redis splits the pipeline per node and
// sends the parts in parallel (one round trip per node involved, no
// cross-slot MGET). At most 10,000 users; all IDs are checked before
// anything is sent. A corrupt value fails the call with an error naming its
// key.
func (t *Tracker) GetMany(ctx context.Context, users []string) ([]Presence, error) {
	return t.getMany(ctx, "get many", users, true)
}

// Online returns the users among users who are online for the system
// (Invisible included), in input order, with one pipeline of GETs (one
// command per user and a TIME; cluster behaviour as GetMany). At most
// 10,000 users.
func (t *Tracker) Online(ctx context.Context, users []string) ([]string, error) {
	ps, err := t.getMany(ctx, "online", users, false)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if p.Online() {
			out = append(out, p.UserID)
		}
	}
	return out, nil
}

func (t *Tracker) getMany(ctx context.Context, op string, users []string, lastSeen bool) ([]Presence, error) {
	if len(users) > maxUsers {
		return nil, pkg.Invalidf(op, "%d users, at most %d", len(users), maxUsers)
	}
	// With no retention there is no last seen to report after expiry (the
	// index keeps silent expiries then only for Sweep).
	lastSeen = lastSeen && !t.opt.noIndex && t.opt.profile.Retention > 0
	ks := make([]string, len(users))
	var idx []string
	if lastSeen {
		idx = make([]string, len(users))
	}
	for i, u := range users {
		k, err := pkg.Key(op, presenceKey, t.opt.ns, u)
		if err != nil {
			return nil, err
		}
		ks[i] = k
		if lastSeen {
			if idx[i], err = pkg.Key(op, onlineKey, t.opt.ns, keys.SlotTag(keys.Slot(k))); err != nil {
				return nil, err
			}
		}
	}
	out := make([]Presence, len(users))
	if len(users) == 0 {
		return out, nil
	}
	pipe := t.run.Client().Pipeline()
	clock := pipe.Time(ctx)
	gets := make([]*redis.StringCmd, len(ks))
	scores := make([]*redis.FloatCmd, len(ks))
	for i, k := range ks {
		gets[i] = pipe.Get(ctx, k)
		if lastSeen {
			scores[i] = pipe.ZScore(ctx, idx[i], users[i])
		}
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	tm, err := clock.Result()
	if err != nil {
		return nil, pkg.Wrap(ctx, op, "", err)
	}
	now := tm.UnixMilli()
	var scratch []byte
	for i, c := range gets {
		ik := ""
		if lastSeen {
			ik = idx[i]
		}
		if out[i], err = t.decodeGet(ctx, op, users[i], ks[i], ik, c, scores[i], now, &scratch); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// lastSeenOf reads the last seen time of a user without a presence key from
// their index score: |score| is the presence expiry plus a status fraction,
// negated once Sweep announced the user offline. A score no script of this
// package writes is corrupt.
func lastSeenOf(c *redis.FloatCmd, key string, ttl float64, now int64) (time.Time, error) {
	s, err := c.Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, err
	}
	s = math.Floor(math.Abs(s))
	if s > ttl+float64(latest(now)) {
		return time.Time{}, keys.Corrupt(key, fmt.Errorf("score %.0f past server time + TTL + %v", s, maxClockSkew))
	}
	if s <= ttl {
		return time.Time{}, nil
	}
	return fromMs(int64(s - ttl)), nil
}

// OnlineNow lists the users online now as others see them (Invisible
// excluded), without KEYS or SCAN: it reads the online index, one sorted
// set per cluster slot, with one pipeline (one round trip on a single
// server, one per node in parallel on a cluster) of 16384 ZRANGE commands
// and a TIME. Cost: O(16384 + online users); use it for dashboards and
// admin views, not per request. The index is updated in the same script as
// the user's keys, so it agrees with Get exactly. Order is unspecified. A
// member that is not a user ID, or whose score no script of this package
// writes, is corrupt (writes to its shard drop such scores, and so does
// Sweep).
func (t *Tracker) OnlineNow(ctx context.Context) ([]string, error) {
	var out []string
	err := t.scanIndex(ctx, "online now", func(user string) { out = append(out, user) })
	return out, err
}

// OnlineCount counts the users OnlineNow would list, at the same cost.
func (t *Tracker) OnlineCount(ctx context.Context) (int, error) {
	n := 0
	err := t.scanIndex(ctx, "online count", func(string) { n++ })
	return n, err
}

func (t *Tracker) scanIndex(ctx context.Context, op string, fn func(user string)) error {
	if t.opt.noIndex {
		return pkg.Fail(op, "", ErrNoIndex, nil)
	}
	pipe := t.run.Client().Pipeline()
	clock := pipe.Time(ctx)
	index, err := t.queueIndex(ctx, pipe, op)
	if err != nil {
		return err
	}
	_, _ = pipe.Exec(ctx) // every command carries its own error
	tm, err := clock.Result()
	if err != nil {
		return pkg.Wrap(ctx, op, "", err)
	}
	users, err := index(tm.UnixMilli())
	for _, u := range users {
		fn(u)
	}
	return err
}
