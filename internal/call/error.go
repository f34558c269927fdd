package call

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// Error is the one error type of the library's operations. It names the
// package, the operation and the key, and matches with errors.Is both its
// Kind (a package sentinel such as lock.ErrNotObtained or ErrInvalid) and
// its cause (a context error, a Redis error, keys.ErrCorrupt,
// keys.ErrInvalid).
//
// Its text says each prefix once:
//
//	lock: acquire "lock:file:{42}": not obtained
//	session: get: invalid argument: keys: invalid key for "session:user:{user_id}:{session_id}": segment {user_id} is empty
type Error struct {
	Pkg  string // "lock"
	Op   string // "acquire"
	Key  string // the key at fault, namespace included; "" before a key is known
	Kind error  // the package sentinel, or nil
	Err  error  // the cause, or nil
}

// Error renders "pkg: op "key": kind: cause", dropping the package's own
// "pkg: " prefix from the kind's and the cause's text.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Pkg)
	b.WriteString(": ")
	b.WriteString(e.Op)
	if e.Key != "" {
		b.WriteByte(' ')
		b.WriteString(strconv.Quote(e.Key))
	}
	for _, x := range []error{e.Kind, e.Err} {
		if x == nil {
			continue
		}
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(x.Error(), e.Pkg+": "))
	}
	return b.String()
}

// Unwrap returns the kind and the cause, so errors.Is matches either.
func (e *Error) Unwrap() []error {
	switch {
	case e.Kind == nil:
		return []error{e.Err}
	case e.Err == nil:
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// Pkg is a package's error vocabulary: its name and its invalid-input
// sentinel. Declare one per package, next to its sentinels.
type Pkg struct {
	Name       string // "lock"
	ErrInvalid error  // the package's ErrInvalid

	mu  sync.Mutex
	ops []*Op // the first op declared under each name
}

func (p *Pkg) record(o *Op) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, x := range p.ops {
		if x.name == o.name {
			return
		}
	}
	p.ops = append(p.ops, o)
}

// Ops returns the operations declared on p, the first of each name, in
// the order they were declared.
func (p *Pkg) Ops() []*Op {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Op(nil), p.ops...)
}

// Fail returns an *Error of op on key with kind and cause (either may be
// nil). A cause that is already an *Error of this package is returned as
// it is (with kind added if it had none), so nothing is wrapped twice.
func (p *Pkg) Fail(op, key string, kind, cause error) error {
	var e *Error
	if cause != nil && errors.As(cause, &e) && e.Pkg == p.Name && kind == nil {
		return cause
	}
	return &Error{Pkg: p.Name, Op: op, Key: key, Kind: kind, Err: cause}
}

// Invalidf returns the package's invalid-input error for op: it matches
// the package's ErrInvalid, and says what is wrong.
func (p *Pkg) Invalidf(op, format string, args ...any) error {
	return &Error{Pkg: p.Name, Op: op, Kind: p.ErrInvalid, Err: fmt.Errorf(format, args...)}
}

// Invalid wraps cause (a keys.SegmentError, a codec error) as the
// package's invalid-input error for op: it matches both the package's
// ErrInvalid and cause.
func (p *Pkg) Invalid(op string, cause error) error {
	var e *Error
	if errors.As(cause, &e) && e.Pkg == p.Name && errors.Is(cause, p.ErrInvalid) {
		return cause
	}
	return &Error{Pkg: p.Name, Op: op, Kind: p.ErrInvalid, Err: cause}
}

// Key builds t's key for args under ns; a value that cannot be a key
// segment is the package's invalid-input error for op, matching both its
// ErrInvalid and keys.ErrInvalid.
func (p *Pkg) Key(op string, t *keys.Template, ns keys.Namespace, args ...string) (string, error) {
	k, err := t.Key(ns, args...)
	if err != nil {
		return "", p.Invalid(op, err)
	}
	return k, nil
}

// Wrap returns err, from plain commands on key made with ctx (outside a
// Runner), as an *Error of op on key, or nil for a nil err. A WRONGTYPE
// reply means key holds data the library did not write: the error then
// matches keys.ErrCorrupt. A network timeout at ctx's deadline matches
// context.DeadlineExceeded, as a Runner's errors do.
func (p *Pkg) Wrap(ctx context.Context, op, key string, err error) error {
	if err == nil {
		return nil
	}
	if strings.Contains(err.Error(), "WRONGTYPE") {
		err = keys.Corrupt(key, err)
	}
	return p.Fail(op, key, nil, withCtx(ctx, err))
}

// WrapPipe returns the error of a pipeline of plain commands, as Exec
// returned them, as Wrap reports it on the key of the command at fault:
// the first that failed with more than redis.Nil and names a key (its
// first argument), so that one key of another type among many is the one
// named. It is nil when no command failed.
func (p *Pkg) WrapPipe(ctx context.Context, op string, cmds []redis.Cmder) error {
	var first error
	for _, c := range cmds {
		err := c.Err()
		if err == nil || errors.Is(err, redis.Nil) {
			continue
		}
		if args := c.Args(); len(args) > 1 {
			if k, ok := args[1].(string); ok {
				return p.Wrap(ctx, op, k, err)
			}
		}
		if first == nil {
			first = err
		}
	}
	if first == nil {
		return nil
	}
	return p.Wrap(ctx, op, "", first)
}

// Skip sorts the replies of one key's reads for an Inspector that leaves
// a bad key out and reads on: false and nil when none failed with more
// than redis.Nil; true and nil for a key of another type, whose error
// (keys.ErrCorrupt naming it, as WrapPipe reports it) is appended to
// *bad; any other failure is returned, to fail the whole read.
func (p *Pkg) Skip(ctx context.Context, op string, bad *[]error, cmds ...redis.Cmder) (bool, error) {
	err := p.WrapPipe(ctx, op, cmds)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, keys.ErrCorrupt):
		*bad = append(*bad, err)
		return true, nil
	}
	return true, err
}
