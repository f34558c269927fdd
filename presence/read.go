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
	// Connections is activeConnections (seed 002 format; 0 for seed 004).
	Connections int
	// Device and Activity are the presence metadata (seed 002 format): the
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

// wire is the union of the seed 002 and seed 004 presence JSON.
type wire struct {
	UserID            string  `json:"userId"`
	Status            *Status `json:"status"`
	LastSeen          int64   `json:"lastSeen"`
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

// decode decodes a presence value. scratch, if not nil, is a buffer reused
// across calls (data may be a Redis reply aliasing a string: it is never
// written).
func (t *Tracker) decode(key, user string, data []byte, scratch *[]byte) (Presence, error) {
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
	if w.Status == nil || !w.Status.valid() {
		return Presence{}, keys.Corrupt(key, errors.New("missing or unknown status"))
	}
	p := Presence{UserID: user, Status: *w.Status, LastSeen: fromMs(w.LastSeen)}
	if w.ActiveConnections != nil {
		p.Connections = *w.ActiveConnections
		if p.Connections <= 0 {
			// Seed 002 readers require activeConnections > 0 to be online.
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
// shard, so it may be reported up to one TTL longer), else zero. Not found is not
// an error. With LayoutSingleKey the GET transfers the user's connections
// too (Presence does not carry them; only the part before them is decoded). Corrupt data gives an error matching keys.ErrCorrupt that names
// the key.
func (t *Tracker) Get(ctx context.Context, user string) (Presence, error) {
	ps, err := t.getMany(ctx, "get", []string{user}, true)
	if err != nil {
		return Presence{}, err
	}
	return ps[0], nil
}

// GetMany returns the presence of each user, in order, as Get does, with
// one pipeline (two commands per user): one round trip on a single server;
// on a cluster go-redis splits the pipeline per node and sends the parts in
// parallel (one round trip per node involved, no cross-slot MGET). All IDs
// are checked before anything is sent. A corrupt value fails the call with
// an error naming its key.
func (t *Tracker) GetMany(ctx context.Context, users []string) ([]Presence, error) {
	return t.getMany(ctx, "get many", users, true)
}

// Online returns the users among users who are online for the system
// (Invisible included), in input order, with one pipeline of GETs (one
// command per user; cluster behaviour as GetMany).
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
	// With no retention there is no last seen to report after expiry (the
	// index keeps silent expiries then only for Sweep).
	lastSeen = lastSeen && !t.cfg.noIndex && t.cfg.profile.Retention > 0
	ks := make([]string, len(users))
	var idx []string
	if lastSeen {
		idx = make([]string, len(users))
	}
	for i, u := range users {
		k, err := presenceKey.Key(t.cfg.ns, u)
		if err != nil {
			return nil, fmt.Errorf("presence: %s: user %d: %w", op, i, err)
		}
		ks[i] = k
		if lastSeen {
			if idx[i], err = onlineKey.Key(t.cfg.ns, slotTag(keys.Slot(k))); err != nil {
				return nil, fmt.Errorf("presence: %s: user %d: %w", op, i, err)
			}
		}
	}
	out := make([]Presence, len(users))
	if len(users) == 0 {
		return out, nil
	}
	pipe := t.c.Pipeline()
	gets := make([]*redis.StringCmd, len(ks))
	scores := make([]*redis.FloatCmd, len(ks))
	for i, k := range ks {
		gets[i] = pipe.Get(ctx, k)
		if lastSeen {
			scores[i] = pipe.ZScore(ctx, idx[i], users[i])
		}
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("presence: %s: %w", op, err)
	}
	ttl := float64(ms(t.cfg.profile.TTL))
	var scratch []byte
	for i, c := range gets {
		b, err := c.Bytes()
		if errors.Is(err, redis.Nil) {
			out[i] = Presence{UserID: users[i], Status: Offline}
			if lastSeen {
				s, err := scores[i].Result()
				if err != nil && !errors.Is(err, redis.Nil) {
					return nil, fmt.Errorf("presence: %s %s: %w", op, idx[i], err)
				}
				// |score| is the expiry plus a status fraction, negated
				// once Sweep announced the user offline
				if s = math.Floor(math.Abs(s)); err == nil && s > ttl {
					out[i].LastSeen = fromMs(int64(s - ttl))
				}
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("presence: %s %s: %w", op, ks[i], err)
		}
		if out[i], err = t.decode(ks[i], users[i], b, &scratch); err != nil {
			return nil, fmt.Errorf("presence: %s: %w", op, err)
		}
	}
	return out, nil
}

// OnlineNow lists the users online now as others see them (Invisible
// excluded), without KEYS or SCAN: it reads the online index, one sorted
// set per cluster slot, with one pipeline (one round trip on a single
// server, one per node in parallel on a cluster) of 16384 ZRANGE commands
// and a TIME. Cost: O(16384 + online users); use it for dashboards and
// admin views, not per request. The index is updated in the same script as
// the user's keys, so it agrees with Get exactly. Order is unspecified.
func (t *Tracker) OnlineNow(ctx context.Context) ([]string, error) {
	var out []string
	err := t.scanIndex(ctx, func(user string) { out = append(out, user) })
	return out, err
}

// OnlineCount counts the users OnlineNow would list, at the same cost.
func (t *Tracker) OnlineCount(ctx context.Context) (int, error) {
	n := 0
	err := t.scanIndex(ctx, func(string) { n++ })
	return n, err
}

func (t *Tracker) scanIndex(ctx context.Context, fn func(user string)) error {
	if t.cfg.noIndex {
		return fmt.Errorf("presence: online now: %w", ErrNoIndex)
	}
	pipe := t.c.Pipeline()
	now := pipe.Time(ctx)
	cmds := make([]*redis.ZSliceCmd, keys.SlotCount)
	ks := make([]string, keys.SlotCount)
	for s := range cmds {
		k, err := onlineKey.Key(t.cfg.ns, slotTag(s))
		if err != nil {
			return fmt.Errorf("presence: online now: %w", err)
		}
		ks[s] = k
		cmds[s] = pipe.ZRangeWithScores(ctx, k, 0, -1)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return fmt.Errorf("presence: online now: %w", err)
	}
	tm, err := now.Result()
	if err != nil {
		return fmt.Errorf("presence: online now: TIME: %w", err)
	}
	cut := float64(tm.UnixMilli())
	for i, c := range cmds {
		for _, z := range c.Val() {
			if math.Floor(z.Score) <= cut { // expired, or announced offline (negative)
				continue
			}
			u, ok := z.Member.(string)
			if !ok {
				return fmt.Errorf("presence: online now: %w", keys.Corrupt(ks[i], fmt.Errorf("member %v", z.Member)))
			}
			fn(u)
		}
	}
	return nil
}
