package keys

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnowned is returned by Registry.Inspect for a key that no registered
// pattern matches under the namespace: no package owns it.
var ErrUnowned = errors.New("keys: no registered pattern owns the key")

// ErrNotFound is returned by Registry.Inspect for a key that a pattern owns
// but that does not exist (never written, expired or deleted).
var ErrNotFound = errors.New("keys: key not found")

// Ref is a key that Registry.Match attributed to a template: what a Decoder
// reads.
type Ref struct {
	Key       string    // the Redis key, namespace included
	Template  *Template // the pattern that owns it
	Args      []string  // placeholder values, in the order of Template.Params
	Namespace Namespace // the namespace it was matched under
	// Cursor is the page of a collection to read: "" for the first, else
	// the Next of the page before (Collection). Decoders of single values
	// ignore it.
	Cursor string
}

// Arg returns the value of placeholder name, or "" if the template has none.
func (r Ref) Arg(name string) string {
	for i, p := range r.Template.params {
		if p == name {
			return r.Args[i]
		}
	}
	return ""
}

// A Decoder reads the value at ref.Key the way the package that owns the
// key's pattern reads it, and returns what the package's API would return
// for it: a struct or map that encodes to readable JSON. It only reads
// (one round trip where it can), never prints a usable secret, and reports
// a value it cannot parse as an error wrapping ErrCorrupt that names the
// key. It may return ErrNotFound for a key that vanished.
//
// Packages give one per key pattern in their Schema (their inspect.go);
// cmd/redschema inspect runs them.
type Decoder func(ctx context.Context, c redis.Cmdable, ref Ref) (any, error)

// SetDecoder registers d as the decoder of t's keys, replacing any earlier
// one. It panics if t is not registered in r or is a channel (channels
// carry messages, not stored values): a programming error, like Register's.
func (r *Registry) SetDecoder(t *Template, d Decoder) {
	if err := r.setDecoder(t, d); err != nil {
		panic(err)
	}
}

// setDecoder is SetDecoder returning an error wrapping ErrInvalid.
func (r *Registry) setDecoder(t *Template, d Decoder) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byText[t.p.Template] != t {
		return fmt.Errorf("%w pattern %q: a decoder for a template not registered here", ErrInvalid, t.p.Template)
	}
	if t.IsChannel() {
		return fmt.Errorf("%w pattern %q: a decoder for a channel", ErrInvalid, t.p.Template)
	}
	if r.decoders == nil {
		r.decoders = map[*Template]Decoder{}
	}
	r.decoders[t] = d
	return nil
}

// Decoder returns the decoder registered for t, or nil.
func (r *Registry) Decoder(t *Template) Decoder {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.decoders[t]
}

// Inspection is what Registry.Inspect found at one key.
type Inspection struct {
	Ref
	// Type is the key's Redis type as TYPE names it.
	Type Type
	// TTL is the key's remaining lifetime, or -1 when it has none.
	TTL time.Duration
	// Value is what the owning package's decoder returned; nil when the
	// pattern has no decoder, the type is wrong or decoding failed.
	Value any
	// DecodeErr is why Value is nil: no decoder, the key holds the wrong
	// type, or the decoder's error (wrapping ErrCorrupt for a bad value).
	DecodeErr error
}

// Inspect attributes key to the pattern that owns it under ns, reads its
// type and TTL, and decodes its value with the owning package's Decoder:
// of a collection, the page that cursor names ("" for the first page,
// else the Collection.Next of the page before, which is empty on the last
// page).
// It returns an error wrapping ErrUnowned when no pattern matches (a
// channel pattern matching says so: channels have no stored value),
// ErrNotFound when the key does not exist, and the server's error on an
// outage. A value that does not decode is not an error of Inspect: it is
// reported in Inspection.DecodeErr with the type and TTL.
//
// Lists and sorted sets page by index, streams by entry ID, hashes and
// sets by their HSCAN or SSCAN cursor, so an element written or removed
// between two pages may shift others and be shown twice or not at all,
// as with SCAN. No command asks for more than 100 elements (a hash or set
// small enough for the server's compact encoding, 128 elements by
// default, comes whole from one HSCAN or SSCAN, and is cut into pages). A
// cursor that is not of the form the key's type pages by (an index, an
// entry ID, a scan cursor; none for a string) is an error wrapping
// ErrInvalid, returned before the value is read.
func (r *Registry) Inspect(ctx context.Context, c redis.Cmdable, ns Namespace, key, cursor string) (*Inspection, error) {
	t, args, ok := r.Match(ns, key)
	if !ok {
		if ct, _, isCh := r.MatchChannel(ns, key); isCh {
			return nil, fmt.Errorf("%w: %q is a %s channel (%q): channels carry messages, not stored values", ErrUnowned, key, ct.p.Owner, ct.p.Template)
		}
		return nil, fmt.Errorf("%w: %q under prefix %q", ErrUnowned, key, ns.Prefix)
	}
	in := &Inspection{Ref: Ref{Key: key, Template: t, Args: args, Namespace: ns, Cursor: cursor}}
	pipe := c.Pipeline()
	typ := pipe.Type(ctx, key)
	pttl := pipe.PTTL(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("keys: inspect %q: %w", key, err)
	}
	in.Type = Type(typ.Val())
	if in.Type == "none" {
		return nil, fmt.Errorf("%w: %q (pattern %q, owner %s)", ErrNotFound, key, t.p.Template, t.p.Owner)
	}
	if err := checkCursor(in.Ref, in.Type); err != nil {
		return nil, err
	}
	in.TTL = pttl.Val()
	if in.TTL < 0 {
		in.TTL = -1
	}
	d := r.Decoder(t)
	switch {
	case in.Type != t.p.Type:
		in.DecodeErr = Corrupt(key, fmt.Errorf("holds a %s, pattern %q declares a %s", in.Type, t.p.Template, t.p.Type))
	case d == nil:
		in.DecodeErr = fmt.Errorf("keys: package %s registers no decoder for %q", t.p.Owner, t.p.Template)
	default:
		in.Value, in.DecodeErr = d(ctx, c, in.Ref)
		if in.DecodeErr != nil {
			in.Value = nil
		}
	}
	return in, nil
}

// checkCursor refuses a cursor that a key of type typ cannot page by.
func checkCursor(ref Ref, typ Type) error {
	if ref.Cursor == "" {
		return nil
	}
	switch typ {
	case Hash, Set:
		if _, _, ok := parseScanCursor(ref.Cursor); !ok {
			return cursorErr(ref, "a scan cursor")
		}
	case List, ZSet:
		_, err := offsetCursor(ref)
		return err
	case Stream:
		if !isStreamID(ref.Cursor) {
			return cursorErr(ref, "a stream entry ID")
		}
	default:
		return cursorErr(ref, "accepted: a "+string(typ)+" has no pages")
	}
	return nil
}
