// Package call is the library's one script-call layer. Every operation
// that runs Lua is declared once, as an *Op (package, operation name, the
// key templates of its KEYS, the script, and which reply statuses are
// which package sentinels), and run by a Runner: EVALSHA with a fallback
// to EVAL on NOSCRIPT, through a shared auto-pipeline (internal/autopipe)
// where the package allows it, on a standalone server or a cluster.
//
// A script is sent as written, after the shared prelude (prelude.lua:
// the reply vocabulary, server time, strict integers), the shared helper
// files its operation names (Needs: batched commands, JSON strings,
// deadlines, scores) and, where the operation names one, its package's
// library file; a fast-path twin (Head) may come first. Every part is a
// whole .lua file: nothing is cut, spliced or generated.
//
// Scripts pass numbers to redis.call as strings: Redis 7.0 formats a Lua
// number argument with "%.17g", about 2,000 instructions each, and passes
// a string as it is. A constant is written as a string literal ('0',
// '-1'; internal/docgen's TestScriptsPassNoNumberLiterals checks every
// .lua file), a computed integer goes through the prelude's int_str
// ("%d", half the cost) where the path is hot.
//
// Every script returns {status, payload...} with status one of the closed
// vocabulary below, or the same as one string of words ("ok 2 online",
// cheaper for Redis than a table: see prelude.lua); the Runner decodes it
// into a Reply, and turns
// "corrupt" into a keys.ErrCorrupt naming the exact key, "invalid" into
// the package's ErrInvalid, and the statuses an Op maps into that
// package's sentinels, always as an *Error that names package, operation
// and key.
package call

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/autopipe"
	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/internal/script"
	"github.com/redschema/redschema/keys"
)

// Status is the first element of every script's reply.
type Status uint8

// The reply vocabulary (see prelude.lua).
const (
	// OK: done; the payload is the operation's.
	OK Status = iota
	// None: what the call addresses does not exist.
	None
	// Conflict: the state refuses the call (held by another owner, a
	// duplicate, a lost lease, a reused token).
	Conflict
	// Limit: a bound is reached (capacity, connections, budget).
	Limit
	// Corrupt: KEYS[i] holds data the library did not write; always an
	// error naming that key.
	Corrupt
	// Invalid: an argument the script rejected; always the package's
	// ErrInvalid.
	Invalid
	nStatus
)

var statusNames = [nStatus]string{"ok", "none", "conflict", "limit", "corrupt", "invalid"}

// String returns the status as scripts spell it.
func (s Status) String() string {
	if s < nStatus {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", uint8(s))
}

func parseStatus(s string) (Status, bool) {
	for i, n := range statusNames {
		if n == s {
			return Status(i), true
		}
	}
	return 0, false
}

// Op is one declared script operation. It is immutable and safe for
// concurrent use; declare it once, in a package-level var (or in a
// constructor, for scripts compiled from configuration).
type Op struct {
	pkg    *Pkg
	name   string
	keys   []*keys.Template
	script *script.Script
	errs   [nStatus]error
	shared bool
	lib    string
	needs  []Helper
	head   string
	body   string

	durable bool
}

// OpOption configures an Op.
type OpOption func(*Op)

// On maps a reply status to a package sentinel: Run returns the Reply and
// an *Error of that kind. A status without a mapping is not an error.
func On(s Status, sentinel error) OpOption { return func(o *Op) { o.errs[s] = sentinel } }

// Shared lets calls of the Op share pipelines with concurrent calls
// (auto-pipelining) when the Runner has lanes. Only for scripts that are
// harmless to run twice: go-redis resends a pipeline whose connection
// broke, and a resent script runs again.
func Shared() OpOption { return func(o *Op) { o.shared = true } }

// Uses puts src, the package's one library file (helpers that two or
// more of its scripts share), after the prelude and before the body, and
// the shared helper files hs that the library calls (see Needs). The
// whole file is sent, so a library holds only what its scripts share.
func Uses(src string, hs ...Helper) OpOption {
	return func(o *Op) {
		o.lib = src
		o.need(hs)
	}
}

// Needs puts the helper files hs after the prelude, in the order of the
// Helper constants, for a script that calls them. calltest.CheckScripts
// fails an operation that calls a helper it does not name, or names one
// it does not call.
func Needs(hs ...Helper) OpOption { return func(o *Op) { o.need(hs) } }

func (o *Op) need(hs []Helper) {
	for _, h := range hs {
		if !slices.Contains(o.needs, h) {
			o.needs = append(o.needs, h)
		}
	}
	slices.Sort(o.needs)
}

// Head puts src, a fast-path twin (a _fast.lua file), first, before the
// prelude: it handles the common case with no helper and returns, or
// falls through, having written nothing, to the general script after
// it. Every "local function" before the body costs a closure on every
// run, so a fast path that returns before them pays none.
func Head(src string) OpOption { return func(o *Op) { o.head = src } }

// Declare declares operation name of package p: body is its .lua file
// (with a header listing KEYS, ARGV and the reply), keyTemplates say what
// KEYS[1], KEYS[2], ... are (extra keys take the last template). The
// script sent is the Head, the prelude, the helpers (Needs), the library
// (Uses) and body, each verbatim. Declare ops at package level: p keeps the first op of
// each name for CheckScripts.
func (p *Pkg) Declare(name, body string, keyTemplates []*keys.Template, opts ...OpOption) *Op {
	o := &Op{pkg: p, name: name, keys: keyTemplates, body: body}
	for _, f := range opts {
		f(o)
	}
	o.script = script.New(source(o.head, o.needs, o.lib, o.body))
	p.record(o)
	return o
}

// Parts returns the files the operation's script is made of: its head
// (a fast-path twin, or ""), its package library (or "") and its body.
// The script is head, Prelude(), the Needs helpers' sources, lib and
// body, joined.
func (o *Op) Parts() (head, lib, body string) { return o.head, o.lib, o.body }

// Needs returns the helpers the operation's script is sent with.
func (o *Op) Needs() []Helper { return slices.Clone(o.needs) }

// Name returns the operation's name.
func (o *Op) Name() string { return o.name }

// Script returns the operation's script, prelude included.
func (o *Op) Script() *script.Script { return o.script }

// Load loads the script on every master (see script.Script.Load), for
// callers that pipeline it with EVALSHA only.
func (o *Op) Load(ctx context.Context, c redis.UniversalClient) error {
	if err := o.script.Load(ctx, c); err != nil {
		return o.pkg.Fail(o.name, "", nil, fmt.Errorf("script load: %w", err))
	}
	return nil
}

// Runner runs Ops on one client. It is safe for concurrent use.
type Runner struct {
	rdb  redis.UniversalClient
	pipe *autopipe.Group
	dur  Durability
}

// DefaultLanes is the round trips a package's Runner keeps in flight for
// concurrent calls, unless its WithPipelining says otherwise: every
// package's default but queue's (2, which its Enqueue rows measured
// best).
const DefaultLanes = 4

// MaxLanes bounds every package's WithPipelining.
const MaxLanes = 1024

// CheckLanes returns the package's invalid-input error for op unless n,
// a WithPipelining value, is 0 (auto-pipelining off) to MaxLanes.
func (p *Pkg) CheckLanes(op string, n int) error {
	if n < 0 || n > MaxLanes {
		return p.Invalidf(op, "WithPipelining(%d): want 0 to %d", n, MaxLanes)
	}
	return nil
}

// NewRunner returns a Runner over rdb. lanes > 0 lets Shared operations
// share pipelines, with at most lanes round trips in flight (on a cluster:
// in all, each master always allowed one); 0 sends every call on its own.
func NewRunner(rdb redis.UniversalClient, lanes int) *Runner {
	r := &Runner{rdb: rdb}
	if lanes > 0 {
		r.pipe = autopipe.New(rdb, lanes)
	}
	return r
}

// Send sends cmds, plain commands that must all hash to key's slot, in
// one round trip: shared with concurrent Shared operations when the
// Runner pipelines, so that a package's reads and scripts fill the same
// batches, else alone. Each command holds its own reply or error; Send's
// error is ctx's when it ended before the commands were sent, or a
// shared pipeline's panic. Nothing is retried: the commands must be
// harmless to send twice (go-redis resends a pipeline whose connection
// broke), and a caller that needs retries through a migration sends a
// script with Run.
//
// On a cluster client that reads from replicas (ReadOnly, RouteByLatency,
// RouteRandomly), a read shared with scripts goes to the master, as the
// whole pipeline does.
func (r *Runner) Send(ctx context.Context, key string, cmds ...redis.Cmder) error {
	if r.pipe != nil {
		return r.pipe.Send(ctx, key, cmds...)
	}
	script.PipelineWith(ctx, r.rdb, nil, cmds)
	return nil
}

// Read sends cmd, one plain read of key, as Send does, and returns
// Send's error or else the command's own (redis.Nil for a missing key).
func (r *Runner) Read(ctx context.Context, key string, cmd redis.Cmder) error {
	if err := r.Send(ctx, key, cmd); err != nil {
		return err
	}
	return cmd.Err()
}

// Client returns the client the Runner uses.
func (r *Runner) Client() redis.UniversalClient { return r.rdb }

// Run runs op with keys and args in one round trip and decodes its reply.
// Every key must hash to the slot of keys[0]. Errors are *Error values
// naming the package, op and key: the client's error (network, context,
// cluster), a corrupt or unexpected reply, the package's ErrInvalid, or
// the sentinel that op maps the reply's status to (the Reply is returned
// too, for its payload).
//
// A call that meets a slot migration or a failover (TRYAGAIN, ASK, MOVED,
// CLUSTERDOWN, MASTERDOWN, READONLY, LOADING, after go-redis's own
// retries) is sent again with backoff until ctx ends (MaxRedirectWait
// without a deadline); it then fails with that error, and ctx's error.
func (r *Runner) Run(ctx context.Context, op *Op, keys []string, args ...any) (Reply, error) {
	if err := op.checkKeys(keys); err != nil {
		return Reply{}, err
	}
	var w waited
	v, err := r.run(ctx, op, keys, args, &w)
	if redirected(err) {
		rt := newRetrier(ctx)
		last := err
		for redirected(err) && rt.again(ctx) {
			if v, err = r.run(ctx, op, keys, args, &w); redirected(err) {
				last = err
			}
		}
		switch {
		case redirected(err):
			// The retries stopped at the deadline (or MaxRedirectWait).
			err = errors.Join(err, deadlineErr(ctx))
		case err != nil && ctx.Err() != nil:
			err = errors.Join(last, err) // and what kept it waiting
		}
	}
	r.reloadOnOutage(ctx, err)
	rep, err := r.decode(ctx, op, keys, v, withCtx(ctx, err))
	if err == nil && rep.Status == OK && r.durable(op) {
		err = w.check(op, keys[0], r.dur)
	}
	return rep, err
}

func (r *Runner) run(ctx context.Context, op *Op, keys []string, args []any, w *waited) (any, error) {
	if r.durable(op) {
		return r.runOneWait(ctx, op, keys, args, w)
	}
	if op.shared && r.pipe != nil {
		return r.pipe.Run(ctx, op.script, keys, args...)
	}
	return op.script.Run(ctx, r.rdb, keys, args...).Result()
}

// Call is one call of a batch.
type Call struct {
	Op   *Op
	Keys []string
	Args []any
}

// RunMany runs calls as one pipeline (EVALSHA, then EVAL for any script a
// node lacks; go-redis splits it per node on a cluster) and returns each
// call's reply and error, as Run would; the calls that meet a slot
// migration or a failover are sent again, together, as Run does.
func (r *Runner) RunMany(ctx context.Context, calls []Call) ([]Reply, []error) {
	reps := make([]Reply, len(calls))
	errs := make([]error, len(calls))
	sc := make([]script.Call, 0, len(calls))
	idx := make([]int, 0, len(calls))
	for i, c := range calls {
		if errs[i] = c.Op.checkKeys(c.Keys); errs[i] != nil {
			continue
		}
		sc = append(sc, script.Call{S: c.Op.script, Keys: c.Keys, Args: c.Args})
		idx = append(idx, i)
	}
	if len(sc) == 0 {
		return reps, errs
	}
	vals := make([]any, len(calls))
	var ws []waited // per call, when the batch has durable calls
	for _, c := range calls {
		if r.durable(c.Op) {
			ws = make([]waited, len(calls))
			break
		}
	}
	var rt *retrier
	for len(sc) > 0 {
		var cmds []*redis.Cmd
		if ws != nil {
			wp := make([]*waited, len(idx))
			for j, i := range idx {
				wp[j] = &ws[i]
			}
			cmds = r.pipelineWait(ctx, sc, wp)
		} else {
			cmds = script.Pipeline(ctx, r.rdb, sc)
		}
		var again []script.Call
		var againIdx []int
		for j, cmd := range cmds {
			i := idx[j]
			vals[i], errs[i] = cmd.Result()
			if redirected(errs[i]) {
				again, againIdx = append(again, sc[j]), append(againIdx, i)
			}
		}
		if len(again) == 0 {
			break
		}
		if rt == nil {
			rt = newRetrier(ctx)
		}
		if !rt.again(ctx) {
			for _, i := range againIdx {
				errs[i] = errors.Join(errs[i], deadlineErr(ctx))
			}
			break
		}
		sc, idx = again, againIdx
	}
	for i, c := range calls {
		if c.Op.checkKeys(c.Keys) != nil {
			continue // kept its own error
		}
		r.reloadOnOutage(ctx, errs[i])
		reps[i], errs[i] = r.decode(ctx, c.Op, c.Keys, vals[i], withCtx(ctx, errs[i]))
		if errs[i] == nil && reps[i].Status == OK && r.durable(c.Op) {
			errs[i] = ws[i].check(c.Op, c.Keys[0], r.dur)
		}
	}
	return reps, errs
}

func (o *Op) checkKeys(ks []string) error {
	if len(ks) == 0 || len(ks) < len(o.keys) {
		return o.pkg.Fail(o.name, "", nil, fmt.Errorf("internal error: %d keys, the script takes %d", len(ks), len(o.keys)))
	}
	return nil
}

// decode turns a script's raw outcome into a Reply and an error.
func (r *Runner) decode(ctx context.Context, op *Op, ks []string, v any, err error) (Reply, error) {
	p := op.pkg
	if err != nil {
		if errors.Is(err, redis.Nil) {
			return Reply{}, p.Fail(op.name, ks[0], nil, fmt.Errorf("%w: nil script reply", reply.ErrUnexpected))
		}
		if strings.Contains(err.Error(), "WRONGTYPE") { // miniredis puts it inside its own message
			return Reply{}, r.wrongType(ctx, op, ks, err)
		}
		return Reply{}, p.Fail(op.name, ks[0], nil, err)
	}
	if words, ok := v.(string); ok { // the status and a payload of words: "ok 2 online"
		v = splitWords(words)
	}
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return Reply{}, p.Fail(op.name, ks[0], nil, fmt.Errorf("%w: script reply %T(%.64v) without a status", reply.ErrUnexpected, v, v))
	}
	word, _ := a[0].(string)
	st, ok := parseStatus(word)
	if !ok {
		return Reply{}, p.Fail(op.name, ks[0], nil, fmt.Errorf("%w: unknown script status %.64q", reply.ErrUnexpected, a[0]))
	}
	rep := Reply{Status: st, vals: a[1:], op: op, key: ks[0]}
	switch st {
	case Corrupt:
		i, _ := reply.Int64(rep.Raw(0))
		why, _ := rep.Raw(1).(string)
		if i < 1 || int(i) > len(ks) {
			return rep, p.Fail(op.name, ks[0], nil, fmt.Errorf("%w: corrupt reply names KEYS[%d]", reply.ErrUnexpected, i))
		}
		k := ks[i-1]
		return rep, p.Fail(op.name, k, nil, keys.Corrupt(k, errors.New(why)))
	case Invalid:
		why, _ := rep.Raw(0).(string)
		return rep, p.Fail(op.name, ks[0], p.ErrInvalid, errors.New(why))
	}
	if s := op.errs[st]; s != nil {
		return rep, p.Fail(op.name, ks[0], s, nil)
	}
	return rep, nil
}

// splitWords is a reply given as one string, the status and the payload
// separated by single spaces: the words, each a string (Reply.Int parses
// a string).
func splitWords(s string) []any {
	out := make([]any, 0, 1+strings.Count(s, " "))
	for {
		i := strings.IndexByte(s, ' ')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i])
		s = s[i+1:]
	}
}

// wrongType names the key behind a WRONGTYPE error: the first key whose
// TYPE is not its template's, found with one more round trip (on the
// error path only). That key holds data the library did not write, so the
// error matches keys.ErrCorrupt; if no key can be named, the server's
// error is returned as it is.
func (r *Runner) wrongType(ctx context.Context, op *Op, ks []string, cause error) error {
	p := op.pkg
	pipe := r.rdb.Pipeline()
	types := make([]*redis.StatusCmd, len(ks))
	for i, k := range ks {
		types[i] = pipe.Type(ctx, k)
	}
	_, _ = pipe.Exec(ctx)
	for i, k := range ks {
		got, err := types[i].Result()
		if err != nil || got == "none" || len(op.keys) == 0 {
			continue
		}
		want := string(op.keys[min(i, len(op.keys)-1)].Pattern().Type)
		if got != want {
			return p.Fail(op.name, k, nil, keys.Corrupt(k, fmt.Errorf("holds a %s, want a %s", got, want)))
		}
	}
	return p.Fail(op.name, ks[0], nil, cause)
}

// Reply is a script's decoded reply: its status and payload. Its
// accessors type-check each element; the first failure is kept and
// returned by Err, so a caller reads every field and checks once.
type Reply struct {
	Status Status
	vals   []any
	op     *Op
	key    string
	err    error
}

// Len returns the number of payload elements.
func (r *Reply) Len() int { return len(r.vals) }

// Raw returns payload element i as go-redis decoded it, or nil when
// there is none.
func (r *Reply) Raw(i int) any {
	if i < 0 || i >= len(r.vals) {
		return nil
	}
	return r.vals[i]
}

func (r *Reply) fail(i int, err error) {
	if r.err == nil {
		r.err = fmt.Errorf("payload[%d]: %w", i, err)
	}
}

func (r *Reply) need(i int) bool {
	if i >= len(r.vals) {
		r.fail(i, fmt.Errorf("%w: reply has %d elements", reply.ErrUnexpected, len(r.vals)))
		return false
	}
	return true
}

// Int returns payload element i as an integer (a Lua number, or a string
// holding a decimal integer).
func (r *Reply) Int(i int) int64 {
	if !r.need(i) {
		return 0
	}
	n, err := reply.Int64(r.vals[i])
	if err != nil {
		r.fail(i, err)
	}
	return n
}

// Float returns payload element i as a number (Lua returns non-integers
// as strings).
func (r *Reply) Float(i int) float64 {
	if !r.need(i) {
		return 0
	}
	f, err := reply.Float64(r.vals[i])
	if err != nil {
		r.fail(i, err)
	}
	return f
}

// Str returns payload element i as a string.
func (r *Reply) Str(i int) string {
	if !r.need(i) {
		return ""
	}
	s, err := reply.String(r.vals[i])
	if err != nil {
		r.fail(i, err)
	}
	return s
}

// OptStr returns payload element i as a string, and false when it is
// missing or nil (Lua false).
func (r *Reply) OptStr(i int) (string, bool) {
	if i >= len(r.vals) || r.vals[i] == nil {
		return "", false
	}
	return r.Str(i), true
}

// Strs returns payload element i as a list of strings (nil elements
// become "").
func (r *Reply) Strs(i int) []string {
	if !r.need(i) {
		return nil
	}
	s, err := reply.Strings(r.vals[i])
	if err != nil {
		r.fail(i, err)
	}
	return s
}

// Ints returns payload element i as a list of integers.
func (r *Reply) Ints(i int) []int64 {
	if !r.need(i) {
		return nil
	}
	s, err := reply.Int64s(r.vals[i])
	if err != nil {
		r.fail(i, err)
	}
	return s
}

// List returns payload element i as a list.
func (r *Reply) List(i int) []any {
	if !r.need(i) {
		return nil
	}
	s, err := reply.Slice(r.vals[i], -1)
	if err != nil {
		r.fail(i, err)
	}
	return s
}

// Err returns the first accessor failure as an *Error naming the package,
// the operation and the key, or nil.
func (r *Reply) Err() error {
	if r.err == nil {
		return nil
	}
	if r.op == nil {
		return r.err
	}
	return r.op.pkg.Fail(r.op.name, r.key, nil, r.err)
}

// Corruptf records, as the Reply's error, that the payload shows data at
// key that the library did not write (a value decoded in Go that does
// not parse): Err then returns an *Error matching keys.ErrCorrupt and
// naming key.
func (r *Reply) Corruptf(key, format string, args ...any) {
	if r.err == nil {
		r.err = keys.Corrupt(key, fmt.Errorf(format, args...))
		r.key = key
	}
}

// String renders the reply for debugging.
func (r Reply) String() string {
	var b strings.Builder
	b.WriteString(r.Status.String())
	for _, v := range r.vals {
		fmt.Fprintf(&b, " %v", v)
	}
	return b.String()
}
