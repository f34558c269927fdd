package cache

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed read.lua
	readSrc string
	//go:embed lease.lua
	leaseSrc string
	//go:embed write.lua
	writeSrc string
	//go:embed release.lua
	releaseSrc string
	//go:embed extend.lua
	extendSrc string
	//go:embed unset.lua
	unsetSrc string
	//go:embed delete.lua
	deleteSrc string

	// errLost and errInvalidated are flow signals between the scripts and
	// the load; callers never see them.
	errLost        = errors.New("lease lost")
	errInvalidated = errors.New("tag invalidated during the load")

	entryKeys = []*keys.Template{entryKey, metaKey}
	// Every entry script is harmless to run twice (reads, or writes that
	// recognise their own ID), so all share pipelines when pipelining is
	// on. The read script only reads entries whose metadata predates the
	// hint field (see plainRead).
	readOp    = pkg.Declare("get", readSrc, entryKeys, call.Shared())
	leaseOp   = pkg.Declare("lease", leaseSrc, entryKeys, call.Shared())
	writeOp   = pkg.Declare("write", writeSrc, entryKeys, call.On(call.Conflict, errLost), call.Shared())
	releaseOp = pkg.Declare("release", releaseSrc, entryKeys[1:], call.Shared())
	extendOp  = pkg.Declare("extend lease", extendSrc, entryKeys[1:], call.On(call.Conflict, errLost), call.Shared())
	unsetOp   = pkg.Declare("unset", unsetSrc, entryKeys, call.Shared())
	deleteOp  = pkg.Declare("delete", deleteSrc, entryKeys, call.Shared())
)

// Layout says where a Store keeps its entries: Value, a STRING pattern,
// holds an entry's bytes; Meta, a HASH pattern built from the same
// arguments and hashed to the same slot (the same tag placeholder),
// holds its metadata and lease. APILayout is the AI platform's; other packages
// pass their own patterns (registered in keys) to reuse the machinery.
type Layout struct {
	Value *keys.Template
	Meta  *keys.Template
}

// APILayout returns the AI platform's API cache layout: values at
// cache:api:{endpoint}:{method}:{params_hash}, metadata at
// cache:meta:cache:api:{endpoint}:{method}:{params_hash}.
func APILayout() Layout { return Layout{Value: entryKey, Meta: metaKey} }

func (l Layout) check(op string) error {
	switch {
	case l.Value == nil || l.Meta == nil:
		return pkg.Invalidf(op, "layout without a value or meta pattern")
	case l.Value.Pattern().Type != keys.String || l.Meta.Pattern().Type != keys.Hash:
		return pkg.Invalidf(op, "layout %s / %s: want a STRING and a HASH", l.Value, l.Meta)
	case !slices.Equal(l.Value.Params(), l.Meta.Params()):
		return pkg.Invalidf(op, "layout %s / %s: different placeholders", l.Value, l.Meta)
	case l.Value.Pattern().Tag == "" || l.Value.Pattern().Tag != l.Meta.Pattern().Tag:
		return pkg.Invalidf(op, "layout %s / %s: the value and meta keys must share a hash tag", l.Value, l.Meta)
	}
	return nil
}

// Ref names one entry of a Store: its value key and its meta key. Build
// it with Store.Ref. Refs are comparable.
type Ref struct{ value, meta string }

// Key returns the entry's value key.
func (r Ref) Key() string { return r.value }

// Store is the byte-level cache: read-through fetches with single loading
// across processes, early refresh, stale serving, negative caching, tags,
// batched hit counts and an optional local tier, over one Layout. Cache
// is its typed face for the AI platform's API cache. A Store is safe for
// concurrent use; create one per process and layout, and Close it.
type Store struct {
	rdb     redis.UniversalClient
	run     *call.Runner // scripts, and the plain reads (Runner.Send)
	sets    *txPipe
	layout  Layout
	opt     options
	origin  string // random ID of this Store: owner IDs and events start with it
	seq     atomic.Uint64
	channel string
	maxArg  int64 // longest freshness, ms
	// leaseArg is the lease in ms, rounded up: a loader never holds it for
	// less than WithLease asked.
	leaseArg int64

	flights    singleflight.Group
	refreshing sync.Map // value key -> struct{}: a background refresh runs
	hits       *hitCounter
	local      *localTier
	events     *events
	stats      counters
	closed     atomic.Bool

	bgMu     sync.Mutex
	bgClosed bool           // Close began: no new background work
	bg       sync.WaitGroup // background refreshes and loads, which Close waits for
}

// NewStore returns a Store over rdb with entries at layout. It fails with
// ErrInvalid on a nil client, a client without ContextTimeoutEnabled, a
// bad layout or a bad option; it contacts Redis only with WithLocal (to
// subscribe to the events channel).
func NewStore(rdb redis.UniversalClient, layout Layout, opts ...Option) (*Store, error) {
	const op = "new"
	o, err := call.Configure(pkg, op, rdb, defaults(), opts, (*options).check)
	if err != nil {
		return nil, err
	}
	if err := layout.check(op); err != nil {
		return nil, err
	}
	ch, err := eventsChannel.Key(o.ns)
	if err != nil {
		return nil, pkg.Invalid(op, err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	origin := hex.EncodeToString(b[:])
	s := &Store{
		rdb: rdb, run: call.NewRunner(rdb, o.lanes), sets: newTxPipe(rdb, o.lanes, ch, origin), layout: layout, opt: o,
		origin: origin, channel: ch,
		maxArg: unit.MsFloor(o.maxTTL), leaseArg: unit.MsCeil(o.lease),
	}
	if !o.noHits {
		s.hits = newHitCounter(s)
	}
	s.events = newEvents(s)
	if o.localSize > 0 {
		s.local = newLocalTier(o.localSize, o.localAge)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.events.start(ctx); err != nil {
			return nil, pkg.Fail(op, ch, nil, err)
		}
	}
	return s, nil
}

// Ref builds the entry of the layout's placeholders args (in the order of
// Layout.Value.Params()). A value that cannot be a key segment fails with
// ErrInvalid (and keys.ErrInvalid).
func (s *Store) Ref(args ...string) (Ref, error) {
	const op = "ref"
	v, err := pkg.Key(op, s.layout.Value, s.opt.ns, args...)
	if err != nil {
		return Ref{}, err
	}
	m, err := pkg.Key(op, s.layout.Meta, s.opt.ns, args...)
	if err != nil {
		return Ref{}, err
	}
	return Ref{value: v, meta: m}, nil
}

// refOf returns the entry whose value key is key, or false when key is not
// one of the layout's under the Store's namespace.
func (s *Store) refOf(key string) (Ref, bool) {
	args, err := s.layout.Value.Parse(s.opt.ns, key)
	if err != nil {
		return Ref{}, false
	}
	r, err := s.Ref(args...)
	return r, err == nil
}

// newID returns a fresh owner or request ID: the Store's origin, a dot, a
// sequence number.
func (s *Store) newID() string {
	return s.origin + "." + strconv.FormatUint(s.seq.Add(1), 36)
}

// report hands err to the error hook.
func (s *Store) report(ctx context.Context, key string, err error) {
	if s.opt.hook != nil && err != nil {
		s.opt.hook(ctx, key, err)
	}
}

// Flush adds the hits counted so far to the entries' metadata now (one
// pipeline) instead of at the next flush.
func (s *Store) Flush(ctx context.Context) error {
	if s.hits == nil {
		return nil
	}
	return s.hits.flush(ctx)
}

// Close makes later calls fail with ErrClosed, waits for the work still
// running in the background (refreshes, and loads whose callers stopped
// waiting: each bounded by the load timeout), flushes the counted hits
// and stops the events subscription. Once it returns the Store no longer
// uses its client, which may be closed. It is safe to call twice.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.bgMu.Lock()
	s.bgClosed = true
	s.bgMu.Unlock()
	s.bg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.Flush(ctx)
	s.events.stop()
	return err
}

// background counts a task that may outlive its caller (a refresh, a
// load), which Close waits for; it reports false once Close began. The
// task calls s.bg.Done when it ends.
func (s *Store) background() bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	s.bg.Add(1)
	return true
}

func (s *Store) checkOpen(op, key string) error {
	if s.closed.Load() {
		return pkg.Fail(op, key, ErrClosed, nil)
	}
	return nil
}
