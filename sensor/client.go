package sensor

import (
	_ "embed"
	"hash/fnv"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed lib.lua
	libSrc string
	//go:embed ingest_zset.lua
	ingestZsetSrc string
	//go:embed ingest_zset_fast.lua
	ingestZsetFastSrc string
	//go:embed ingest_list.lua
	ingestListSrc string
	//go:embed ingest_compact.lua
	ingestCompactSrc string
	//go:embed touch_location.lua
	touchLocationSrc string
	//go:embed touch_location_fast.lua
	touchLocationFastSrc string
	//go:embed latest.lua
	latestSrc string
	//go:embed range.lua
	rangeSrc string
	//go:embed aggregate.lua
	aggregateSrc string
	//go:embed motion.lua
	motionSrc string
	//go:embed index_read.lua
	indexReadSrc string

	// lib is lib.lua, sent whole between the prelude and the scripts
	// that use it (call.Uses): every "local function" in it costs a
	// closure on every run, so it holds only what two scripts share.
	lib = libSrc

	// A motion or environmental write's common case runs
	// ingest_zset_fast.lua, before any helper is defined.
	ingestMotionOp = pkg.Declare("ingest", ingestZsetSrc,
		[]*keys.Template{motionKey, typesKey, minuteKey, hourKey, motionMetaKey}, call.Uses(lib, call.ScoreMS, call.ToNum), call.Head(ingestZsetFastSrc))
	ingestEnvOp = pkg.Declare("ingest", ingestZsetSrc,
		[]*keys.Template{envKey, typesKey, minuteKey, hourKey}, call.Uses(lib, call.ScoreMS, call.ToNum), call.Head(ingestZsetFastSrc))
	ingestListOp = pkg.Declare("ingest", ingestListSrc,
		[]*keys.Template{genericKey, genericMetaKey, typesKey, minuteKey, hourKey}, call.Uses(lib, call.ScoreMS, call.ToNum))
	ingestCompactOp = pkg.Declare("ingest", ingestCompactSrc,
		[]*keys.Template{compactKey, typesKey, minuteKey, hourKey}, call.Uses(lib, call.ScoreMS, call.ToNum))
	ingestCompactMotionOp = pkg.Declare("ingest", ingestCompactSrc,
		[]*keys.Template{compactKey, typesKey, minuteKey, hourKey, motionMetaKey}, call.Uses(lib, call.ScoreMS, call.ToNum))
	touchLocationOp = pkg.Declare("ingest", touchLocationSrc, []*keys.Template{locationsKey}, call.Uses(lib, call.ScoreMS, call.ToNum), call.Head(touchLocationFastSrc))
	latestOps       = readOps("latest", latestSrc)
	rangeOps        = readOps("range", rangeSrc)
	aggregateOps    = readOps("aggregate", aggregateSrc)
	motionOp        = pkg.Declare("motion", motionSrc, []*keys.Template{motionMetaKey})
	typesOp         = pkg.Declare("types", indexReadSrc, []*keys.Template{typesKey})
	locationsOp     = pkg.Declare("locations", indexReadSrc, []*keys.Template{locationsKey})
)

// readOps declares a read script once per source, so that an error names
// the key with the type its source has ("zset", "list", "compact",
// "rollup").
func readOps(name, src string) map[string]*call.Op {
	out := map[string]*call.Op{}
	for kind, tm := range map[string]*keys.Template{"zset": envKey, "list": genericKey, "compact": compactKey, "rollup": minuteKey} {
		out[kind] = pkg.Declare(name, src, []*keys.Template{tm}, call.Uses(lib, call.ScoreMS, call.ToNum), call.On(call.Limit, ErrTooMany))
	}
	return out
}

// dupScan is how many of a generic list's newest entries a write searches
// for a resend of itself or a duplicate.
const dupScan = 32

// locationRefresh is how far a location's entry in the locations index
// may lag its newest reading: a write whose reading is newer than the
// entry by less than this writes nothing there (touch_location_fast.lua),
// and Locations lists an entry (and the index key lives) this much
// longer than the retention.
const locationRefresh = time.Minute

// Client stores and queries sensor readings in one Redis keyspace. It is
// safe for concurrent use; create one per process and namespace.
type Client struct {
	run   *call.Runner
	opt   options
	types map[string]bool // allow-list, or nil for any
	locs  map[string]bool // allow-list, or nil for any
	now   func() time.Time

	locations string // the locations index's key
}

// target is the set of keys of one sensor type in one location, all in
// the location's slot.
type target struct {
	typ, loc     string
	fam          family
	raw, meta    string // meta: "" for the environmental types
	types        string
	minute, hour string
	kind, field  string // the read scripts' source and field
	ingest       *call.Op
	compact      bool
}

func (c *Client) target(op, typ, loc string) (target, error) {
	if err := checkType(op, typ, c.types); err != nil {
		return target{}, err
	}
	if err := checkLocation(op, loc, c.locs); err != nil {
		return target{}, err
	}
	t := target{typ: typ, loc: loc, fam: familyOf(typ), compact: c.opt.compact}
	ns := c.opt.ns
	var err error
	key := func(tm *keys.Template, args ...string) string {
		if err != nil {
			return ""
		}
		var k string
		k, err = pkg.Key(op, tm, ns, args...)
		return k
	}
	t.types = key(typesKey, loc)
	t.minute = key(minuteKey, typ, loc)
	t.hour = key(hourKey, typ, loc)
	switch t.fam {
	case famMotion:
		t.raw, t.meta, t.kind, t.ingest = key(motionKey, loc), key(motionMetaKey, loc), "zset", ingestMotionOp
	case famEnv:
		t.raw, t.kind, t.field, t.ingest = key(envKey, loc), "zset", typ, ingestEnvOp
	default:
		t.raw, t.meta, t.kind, t.ingest = key(genericKey, typ, loc), key(genericMetaKey, typ, loc), "list", ingestListOp
	}
	if c.opt.compact {
		t.raw, t.kind, t.field, t.ingest = key(compactKey, typ, loc), "compact", "", ingestCompactOp
		if t.fam == famMotion {
			t.ingest = ingestCompactMotionOp
		} else {
			t.meta = ""
		}
	}
	return t, err
}

// shortID is the compact encoding's reading ID: 6 base-36 digits of a
// hash of the reading's ID (it only tells apart readings of one sensor
// at one millisecond).
func shortID(id string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(id))
	s := strconv.FormatUint(h.Sum64()%2176782336, 36) // 36^6
	for len(s) < 6 {
		s = "0" + s
	}
	return s
}
