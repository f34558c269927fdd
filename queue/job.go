package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/internal/reply"
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
	// per-queue sequence number (the stats hash's delivery_seq), so it is
	// unique among all deliveries of the queue and larger for later ones.
	// A stale holder (its lease recovered, or the job deleted and
	// re-enqueued under the same ID, or requeued from the dead letters)
	// can never settle a later delivery.
	Delivery int64
	// LeaseDeadline is when the lease expires (server clock) unless extended.
	LeaseDeadline time.Time

	delivered time.Time // local clock, for processing time
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
	MaxRetries   int             `json:"max_retries"`
}

func (q *Queue[T]) encode(id string, payload T, p Priority, created time.Time, maxRetries int) (string, error) {
	data, err := q.o.codec.Marshal(payload)
	if err != nil {
		return "", fmt.Errorf("%w: payload does not encode: %w", ErrInvalid, err)
	}
	w := wireJob{ID: id, Priority: int(p), CreatedAt: created.UTC(), MaxRetries: maxRetries}
	if _, isJSON := q.o.codec.(codec.JSON); isJSON || json.Valid(data) {
		w.Payload = data
	} else {
		w.PayloadBytes = data
	}
	out, err := json.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("%w: payload does not encode: %w", ErrInvalid, err)
	}
	if len(out) > q.o.maxPayload {
		return "", fmt.Errorf("%w: job %q is %d bytes, limit %d", ErrTooLarge, id, len(out), q.o.maxPayload)
	}
	return string(out), nil
}

// decodeBody decodes a stored job JSON read from key into j.
func (q *Queue[T]) decodeBody(key, body string, j *Job[T]) error {
	if q.isJSON {
		// One pass when the payload codec is JSON too.
		var w struct {
			ID         string    `json:"id"`
			Payload    *T        `json:"payload"`
			Priority   int       `json:"priority"`
			CreatedAt  time.Time `json:"created_at"`
			MaxRetries int       `json:"max_retries"`
		}
		w.Payload = &j.Payload
		if err := json.Unmarshal([]byte(body), &w); err != nil {
			return keys.Corrupt(key, err)
		}
		j.ID, j.CreatedAt, j.Priority, j.MaxRetries = w.ID, w.CreatedAt, Priority(w.Priority), w.MaxRetries
		return nil
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

func msTime(v int64) time.Time { return time.UnixMilli(v) }

// decodeLeased turns dequeue's reply rows (8 values per job) into jobs.
func (q *Queue[T]) decodeLeased(ctx context.Context, rows []any) ([]*Job[T], error) {
	_ = ctx
	if len(rows)%8 != 0 {
		return nil, fmt.Errorf("queue: dequeue %q: %w: %d values", q.name, reply.ErrUnexpected, len(rows))
	}
	now := time.Now()
	out := make([]*Job[T], 0, len(rows)/8)
	var firstErr error
	for i := 0; i < len(rows); i += 8 {
		id, e1 := reply.String(rows[i])
		dlv, e2 := reply.Int64(rows[i+1])
		retry, e3 := reply.Int64(rows[i+2])
		max, e4 := reply.Int64(rows[i+3])
		lvl, e5 := reply.String(rows[i+4])
		body, e6 := reply.String(rows[i+5])
		deadline, e7 := reply.Int64(rows[i+6])
		lastErr, e8 := reply.String(rows[i+7])
		if err := firstNonNil(e1, e2, e3, e4, e5, e6, e7, e8); err != nil {
			return out, fmt.Errorf("queue: dequeue %q: %w", q.name, err)
		}
		j := &Job[T]{Delivery: dlv, RetryCount: int(retry), LastError: lastErr, LeaseDeadline: msTime(deadline), delivered: now}
		if err := q.decodeBody(q.jobs, body, j); err != nil {
			// The job is leased: fail it so it ends in the dead-letter list
			// with the reason instead of looping.
			if firstErr == nil {
				firstErr = fmt.Errorf("queue: dequeue %q: job %q: %w", q.name, id, err)
			}
			q.settleDetached(ctx, []settleOp{{op: 'd', id: id, dlv: dlv, err: "corrupt: " + err.Error()}})
			continue
		}
		j.ID = id
		j.MaxRetries = int(max)
		if p, ok := parseLevel(lvl); ok {
			j.Priority = p
		}
		out = append(out, j)
	}
	return out, firstErr
}

func firstNonNil(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
