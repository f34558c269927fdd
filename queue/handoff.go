package queue

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redschema/redschema/internal/call"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

var (
	//go:embed handoff.lua
	handoffSrc string

	handoffOp = pkg.Declare("handoff", handoffSrc, []*keys.Template{wakeKey, replyKey}, call.Durable())
)

// itemFields are the AI platform's own fields of an item (besides the
// payload's): a payload may not have them.
var itemFields = []string{"id", "priority", "created_at", "retry_count"}

// jsISO is JavaScript's Date.prototype.toISOString layout.
const jsISO = "2006-01-02T15:04:05.000Z"

// Handoff pushes payload onto the queue's executions list as one item of
// the AI platform's own format (docs/ai-platform.md), for a consumer of
// that system that still pops the list (RPOP, oldest first), and returns
// the item's ID. The payload's fields go at the item's top level:
//
//	{"id":"…",<payload's fields>,"priority":0,"created_at":"2026-01-16T10:00:00.000Z","retry_count":0}
//
// created_at is this process's clock in JavaScript's toISOString form;
// priority is 1 (High), 0 (Normal) or -1 (Low). A consumer of this
// package adopts such an item too (WithSeedConsumers): whichever side
// pops it first runs it, once.
//
// It needs WithSeedConsumers and the JSON codec, a payload that encodes
// to a JSON object without the item's own fields (id, priority,
// created_at, retry_count), and no EnqueueOption but WithID and
// WithPriority (the item has no place for the others); else ErrInvalid,
// an item over WithMaxPayload ErrTooLarge, with nothing written. One
// script (one round trip); a resend by go-redis after a lost reply
// pushes nothing more (a reply memo, kept 3 minutes). Nothing is counted
// in the stats hash until a consumer of this package adopts the item.
func (q *Queue[T]) Handoff(ctx context.Context, payload T, opts ...EnqueueOption) (string, error) {
	const op = "handoff"
	item, id, err := q.item(op, payload, opts)
	if err != nil {
		return "", err
	}
	_, err = q.run.Run(ctx, handoffOp, []string{q.execs, q.request()}, item, unit.MsCeil(replayWindow))
	nd, err := call.NotDurable(err)
	if err != nil {
		return "", err
	}
	return id, nd
}

// item builds Handoff's item JSON and returns it with its ID.
func (q *Queue[T]) item(op string, payload T, opts []EnqueueOption) (string, string, error) {
	c := enqueueConfig{maxRetries: -1}
	for _, f := range opts {
		f(&c)
	}
	var other string
	switch {
	case !q.o.seed:
		return "", "", pkg.Invalidf(op, "Handoff needs WithSeedConsumers: the queue's wake-up token must stay off the list it pushes to")
	case !q.isJSON:
		return "", "", pkg.Invalidf(op, "Handoff needs the JSON codec: the item is JSON")
	case c.idSet && c.id == "":
		return "", "", pkg.Invalidf(op, "empty job ID (WithID)")
	case !c.priority.valid():
		return "", "", pkg.Invalidf(op, "priority %d", int(c.priority))
	case c.delay != 0:
		other = "WithDelay"
	case !c.processAt.IsZero():
		other = "WithProcessAt"
	case c.maxRetries != -1:
		other = "WithJobMaxRetries"
	case c.unique != 0:
		other = "WithUnique"
	case c.timeout != 0:
		other = "WithTimeout"
	case c.headers != nil:
		other = "WithHeaders"
	case c.group != "":
		other = "WithGroup"
	}
	if other != "" {
		return "", "", pkg.Invalidf(op, "%s: the AI platform's item has no place for it (Handoff takes WithID and WithPriority)", other)
	}
	id := c.id
	if id == "" {
		id = newID()
	} else if _, err := q.jobKey(op, id); err != nil {
		return "", "", err
	}
	data, err := q.o.codec.Marshal(payload)
	if err != nil {
		return "", "", pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
	}
	var body bytes.Buffer
	if err := json.Compact(&body, data); err != nil || body.Len() < 2 || body.Bytes()[0] != '{' {
		return "", "", pkg.Invalidf(op, "payload encodes to %.32q, not a JSON object: the item's fields are the payload's", data)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body.Bytes(), &fields); err != nil {
		return "", "", pkg.Invalid(op, fmt.Errorf("payload does not decode as an object: %w", err))
	}
	for _, f := range itemFields {
		if _, ok := fields[f]; ok {
			return "", "", pkg.Invalidf(op, "payload has the item's own field %q (Handoff writes it)", f)
		}
	}
	jid, _ := json.Marshal(id)
	inner := body.Bytes()[1 : body.Len()-1]
	out := make([]byte, 0, body.Len()+len(jid)+96)
	out = append(out, `{"id":`...)
	out = append(out, jid...)
	if len(inner) > 0 {
		out = append(out, ',')
		out = append(out, inner...)
	}
	out = append(out, `,"priority":`...)
	out = strconv.AppendInt(out, int64(c.priority), 10)
	out = append(out, `,"created_at":"`...)
	out = time.Now().UTC().AppendFormat(out, jsISO)
	out = append(out, `","retry_count":0}`...)
	if len(out) > q.o.maxPayload {
		return "", "", pkg.Fail(op, "", ErrTooLarge, fmt.Errorf("item %q is %d bytes, limit %d", id, len(out), q.o.maxPayload))
	}
	return string(out), id, nil
}
