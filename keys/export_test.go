package keys

// Internals the external tests (package keys_test) check directly.
var (
	Escape     = escape
	Unescape   = unescape
	HashPart   = hashPart
	GlobEscape = globEscape
	Compile    = compile
	ErrNoMatch = errNoMatch
	RecordSize = recordSize
)

const (
	MaxSegmentLen = maxSegmentLen
	InspectLimit  = inspectLimit
	RecordFields  = maxRecordFields
	GuessSample   = guessSample
)

// Entries returns the rows Registry.JSON encodes.
func (r *Registry) Entries(opt TableOptions) []schemaEntry { return r.entries(opt) }
