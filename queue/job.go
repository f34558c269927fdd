package queue

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/unit"
	"github.com/redschema/redschema/keys"
)

// Job is one delivered job. Its lease is held until Ack, Nack, Release or
// the lease deadline; the fields are a snapshot taken at delivery.
type Job[T any] struct {
	ID         string
	Payload    T
	Priority   Priority
	CreatedAt  time.Time
	RetryCount int    // failed attempts before this delivery
	MaxRetries int    // retries allowed after the first attempt
	LastError  string // error of the previous attempt, if any
	// Delivery is the lease token Ack, Nack, Release and Extend check: a
	// per-queue sequence number (the stats hash's delivery_seq), never
	// below the server time in microseconds when it is given, so it is
	// unique among all deliveries of the queue and larger for later ones,
	// even after the server lost its data (unless its clock went back).
	// A stale holder (its lease recovered, or the job deleted and
	// re-enqueued under the same ID, or requeued from the dead letters)
	// can never settle a later delivery.
	Delivery int64
	// LeaseDeadline is when the lease expires (server clock) unless extended.
	LeaseDeadline time.Time
	// Timeout is the job's own time limit (WithTimeout), 0 for none: Run
	// gives the handler a context that ends this long after it starts.
	Timeout time.Duration
	// Headers are the job's envelope metadata (WithHeaders), nil when it
	// has none: trace context, tenant, correlation IDs. Middleware reads
	// them (see WithMiddleware).
	Headers map[string]string
	// Group is the job's group (WithGroup), "" for none: the group limits
	// of the queue (WithGroupLimits) apply to it.
	Group string

	delivered time.Time // local clock, for processing time
	q         *Queue[T] // the queue it came from (SetProgress)
	result    []byte    // SetResult's JSON, written by the ack
}

// Queue returns the name of the queue j was delivered from ("" for a Job
// not from a dequeue), for middleware.
func (j *Job[T]) Queue() string {
	if j == nil || j.q == nil {
		return ""
	}
	return j.q.name
}

// wireJob is the stored job JSON: seed 001's item format ("id",
// "priority", "created_at", "retry_count") with the caller's payload under
// "payload". retry_count is the count when the job was written (0); the
// live count is in the state hash and shown by Job and Info.
type wireJob struct {
	ID           string          `json:"id"`
	Payload      json.RawMessage `json:"payload,omitempty"`
	PayloadBytes []byte          `json:"payload_bytes,omitempty"`
	Priority     int             `json:"priority"`
	CreatedAt    time.Time       `json:"created_at"`
	RetryCount   int             `json:"retry_count"`
	// Optional fields go before max_retries, which ends the JSON (the
	// dequeue script reads it there).
	Headers   map[string]string `json:"headers,omitempty"`
	TimeoutMS int64             `json:"timeout_ms,omitempty"`
	// Group goes right before max_retries: the dequeue script reads it
	// there (WithGroup's names need no JSON escaping).
	Group      string `json:"group,omitempty"`
	MaxRetries int    `json:"max_retries"`
}

// jobExt is the optional part of a job's envelope.
type jobExt struct {
	headers map[string]string
	timeout time.Duration
	group   string
}

func (q *Queue[T]) encode(op, id string, payload T, p Priority, created time.Time, maxRetries int, ext ...jobExt) (string, error) {
	data, err := q.o.codec.Marshal(payload)
	if err != nil {
		return "", pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
	}
	var x jobExt
	if len(ext) > 0 {
		x = ext[0]
	}
	var out string
	if q.isJSON && plainJSON(id) && x.headers == nil && x.timeout == 0 && x.group == "" {
		out = appendWire(id, data, p, created, maxRetries)
	} else {
		w := wireJob{ID: id, Priority: int(p), CreatedAt: created.UTC(), MaxRetries: maxRetries, Headers: x.headers, TimeoutMS: unit.MsCeil(x.timeout), Group: x.group}
		if q.isJSON || json.Valid(data) {
			w.Payload = data
		} else {
			w.PayloadBytes = data
		}
		b, err := json.Marshal(w)
		if err != nil {
			return "", pkg.Invalid(op, fmt.Errorf("payload does not encode: %w", err))
		}
		out = string(b)
	}
	if len(out) > q.o.maxPayload {
		return "", pkg.Fail(op, "", ErrTooLarge, fmt.Errorf("job %q is %d bytes, limit %d", id, len(out), q.o.maxPayload))
	}
	return out, nil
}

// appendWire writes what json.Marshal writes for the wireJob of a JSON
// payload (data, from json.Marshal: compact, HTML-escaped) and an ID that
// needs no escaping, in one allocation.
func appendWire(id string, data []byte, p Priority, created time.Time, maxRetries int) string {
	var scratch [40]byte
	var b strings.Builder
	b.Grow(len(id) + len(data) + 110)
	b.WriteString(`{"id":"`)
	b.WriteString(id)
	b.WriteString(`","payload":`)
	b.Write(data)
	b.WriteString(`,"priority":`)
	b.Write(strconv.AppendInt(scratch[:0], int64(p), 10))
	b.WriteString(`,"created_at":"`)
	b.Write(created.UTC().AppendFormat(scratch[:0], time.RFC3339Nano))
	b.WriteString(`","retry_count":0,"max_retries":`)
	b.Write(strconv.AppendInt(scratch[:0], int64(maxRetries), 10))
	b.WriteByte('}')
	return b.String()
}

// plainJSON reports whether json.Marshal writes s as itself in quotes:
// printable ASCII without the characters it escapes.
func plainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20, c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// decodeBody decodes a stored job JSON read from key into j.
func (q *Queue[T]) decodeBody(key, body string, j *Job[T]) error {
	if q.isJSON {
		// One pass when the payload codec is JSON too.
		var w struct {
			ID         string            `json:"id"`
			Payload    *T                `json:"payload"`
			Priority   int               `json:"priority"`
			CreatedAt  time.Time         `json:"created_at"`
			Headers    map[string]string `json:"headers"`
			TimeoutMS  int64             `json:"timeout_ms"`
			Group      string            `json:"group"`
			MaxRetries int               `json:"max_retries"`
		}
		w.Payload = &j.Payload
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			return keys.Corrupt(key, err)
		}
		j.ID, j.CreatedAt, j.Priority, j.MaxRetries = w.ID, w.CreatedAt, Priority(w.Priority), w.MaxRetries
		j.Headers, j.Group = w.Headers, w.Group
		return timeoutOf(key, w.TimeoutMS, &j.Timeout)
	}
	var w wireJob
	if err := json.Unmarshal([]byte(body), &w); err != nil {
		return keys.Corrupt(key, err)
	}
	data := []byte(w.Payload)
	if w.PayloadBytes != nil {
		data = w.PayloadBytes
	}
	if err := codec.Decode(q.o.codec, key, data, &j.Payload); err != nil {
		return err
	}
	j.ID, j.CreatedAt, j.Priority, j.MaxRetries = w.ID, w.CreatedAt, Priority(w.Priority), w.MaxRetries
	j.Headers, j.Group = w.Headers, w.Group
	return timeoutOf(key, w.TimeoutMS, &j.Timeout)
}

// timeoutOf sets *d to a stored timeout_ms (none at or below 0): one
// past what Enqueue takes (maxTimeout) is foreign data, where it would
// overflow a time.Duration or run a job longer than any lease.
func timeoutOf(key string, ms int64, d *time.Duration) error {
	if ms > maxTimeout.Milliseconds() {
		return keys.Corrupt(key, fmt.Errorf("timeout_ms %d beyond %v", ms, maxTimeout))
	}
	*d = time.Duration(max(ms, 0)) * time.Millisecond
	return nil
}

// parseState reads "dlv,retry,max,level,err".
func parseState(key, s string) (dlv int64, retry, max int, p Priority, lastErr string, err error) {
	f := strings.SplitN(s, ",", 5)
	bad := func() error { return keys.Corrupt(key, fmt.Errorf("bad job state %.64q", s)) }
	if len(f) != 5 {
		return 0, 0, 0, 0, "", bad()
	}
	var e1, e2, e3 error
	dlv, e1 = strconv.ParseInt(f[0], 10, 64)
	retry, e2 = strconv.Atoi(f[1])
	max, e3 = strconv.Atoi(f[2])
	p, ok := parseLevel(f[3])
	if e1 != nil || e2 != nil || e3 != nil || !ok {
		return 0, 0, 0, 0, "", bad()
	}
	return dlv, retry, max, p, f[4], nil
}

// newID returns a random UUID (version 4), the seed's "id" format.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var out [36]byte
	hex.Encode(out[0:8], b[0:4])
	out[8] = '-'
	hex.Encode(out[9:13], b[4:6])
	out[13] = '-'
	hex.Encode(out[14:18], b[6:8])
	out[18] = '-'
	hex.Encode(out[19:23], b[8:10])
	out[23] = '-'
	hex.Encode(out[24:], b[10:])
	return string(out[:])
}
