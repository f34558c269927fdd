package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/reply"
	"github.com/redschema/redschema/keys"
)

// EventKind says what happened to a job (WithEvents).
type EventKind string

// The event kinds. Each is written by the script that makes the change,
// in the same atomic step.
const (
	EventEnqueued  EventKind = "enqueued"  // Enqueue, EnqueueBatch or a schedule's tick added it
	EventStarted   EventKind = "started"   // a dequeue leased it (Delivery, RetryCount: failed attempts before)
	EventProgress  EventKind = "progress"  // its handler called SetProgress (Progress)
	EventCompleted EventKind = "completed" // acked
	// EventFailed: an attempt failed (a handler error, Nack, an expired
	// lease: Error); an EventRetried or an EventDead follows at once.
	EventFailed    EventKind = "failed"
	EventRetried   EventKind = "retried"   // after a failure, scheduled for another attempt
	EventDead      EventKind = "dead"      // moved to the dead-letter list (Error)
	EventCancelled EventKind = "cancelled" // Cancel removed it, or its handler stopped after Cancel
)

func (k EventKind) valid() bool {
	switch k {
	case EventEnqueued, EventStarted, EventProgress, EventCompleted, EventFailed, EventRetried, EventDead, EventCancelled:
		return true
	}
	return false
}

// Event is one lifecycle event of a job, read from the queue's events
// stream.
type Event struct {
	// ID is the stream entry ID: pass the last one handled to ReadEvents
	// to go on after it. IDs grow in the order the events happened.
	ID         string
	Kind       EventKind
	JobID      string
	At         time.Time // server time of the change
	Delivery   int64     // the delivery (lease token) concerned; 0 when none
	RetryCount int       // failed attempts so far, where it applies
	Error      string    // EventFailed, EventDead
	// Progress is the JSON SetProgress recorded (EventProgress).
	Progress json.RawMessage
}

// maxEventsRead bounds one ReadEvents.
const maxEventsRead = 10000

// ReadEvents returns up to count (1 to 10,000) events recorded
// after the event with ID after ("" for the oldest the stream keeps), in
// order. With none there, it waits up to block for one (0: it returns at
// once, with none); ctx bounds the wait too. One round trip (a pipeline
// of an XRANGE from after itself and an XRANGE of the stream's first
// entry), and a blocking XREAD after it when there is nothing yet and
// block is not 0. A reader that saves the last ID it handled and resumes
// from it misses no event, unless the stream was trimmed past it (it
// keeps about the WithEvents length): then the events read come with
// ErrEventsTrimmed. The read either finds the entry after (nothing after
// it was trimmed) or not; one not found is reported when it is before
// the stream's first entry, which an event trimmed away is, and an after
// that never was an entry may be. An empty or missing stream is not
// checked (it returns no events). A blocking wait is not checked: it
// returns the first events added after after, which can follow a gap
// only if the one write that added them trimmed past after too (an
// EnqueueBatch of more jobs than the WithEvents length). Reading needs no
// WithEvents. An entry that is not an event is skipped and reported,
// after the events read, as an error matching keys.ErrCorrupt naming the
// stream; after a malformed ID is ErrInvalid.
func (q *Queue[T]) ReadEvents(ctx context.Context, after string, count int, block time.Duration) ([]Event, error) {
	const op = "events"
	if after == "" {
		after = "0-0"
	}
	ms, seq, ok := reply.StreamID(after)
	if !ok || count < 1 || count > maxEventsRead || block < 0 {
		return nil, pkg.Invalidf(op, "after %q, count %d (1..%d), block %v", after, count, maxEventsRead, block)
	}
	after = strconv.FormatUint(ms, 10) + "-" + strconv.FormatUint(seq, 10)
	c := q.run.Client()
	// From after itself: finding it tells that nothing after it was
	// trimmed; then the stream's first entry, for an after not found.
	pipe := c.Pipeline()
	readCmd := pipe.XRangeN(ctx, q.events, after, "+", int64(count)+1)
	firstCmd := pipe.XRangeN(ctx, q.events, "-", "+", 1)
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, pkg.Fail(op, q.events, nil, err)
	}
	msgs := readCmd.Val()
	found := len(msgs) > 0 && msgs[0].ID == after
	if found {
		msgs = msgs[1:]
	}
	msgs = msgs[:min(len(msgs), count)]
	var bad error
	if first := firstCmd.Val(); !found && (ms != 0 || seq != 0) && len(first) > 0 && reply.StreamIDBefore(after, first[0].ID) {
		bad = pkg.Fail(op, q.events, ErrEventsTrimmed, fmt.Errorf("resumed after %s, before the stream's first entry %s", after, first[0].ID))
	}
	res := []redis.XStream{{Stream: q.events, Messages: msgs}}
	if len(msgs) == 0 && block > 0 {
		var err error
		res, err = c.XRead(ctx, &redis.XReadArgs{Streams: []string{q.events, after}, Count: int64(count), Block: max(block, time.Millisecond)}).Result()
		if errors.Is(err, redis.Nil) {
			return nil, bad
		}
		if err != nil {
			return nil, errors.Join(bad, pkg.Fail(op, q.events, nil, err))
		}
	}
	var out []Event
	for _, st := range res {
		for _, m := range st.Messages {
			e, err := parseEvent(m.ID, m.Values)
			if err != nil {
				if !errors.Is(bad, keys.ErrCorrupt) { // the first corrupt entry, after a trim's error
					bad = errors.Join(bad, pkg.Fail(op, q.events, nil, keys.Corrupt(q.events, err)))
				}
				continue
			}
			out = append(out, e)
		}
	}
	return out, bad
}

// parseEvent decodes one stream entry.
func parseEvent(id string, f map[string]any) (Event, error) {
	str := func(name string) string { v, _ := f[name].(string); return v }
	num := func(name string) (int64, bool) {
		s := str(name)
		if s == "" {
			return 0, true
		}
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil && n >= 0
	}
	e := Event{ID: id, Kind: EventKind(str("kind")), JobID: str("job_id"), Error: str("error")}
	if !e.Kind.valid() || e.JobID == "" {
		return Event{}, fmt.Errorf("entry %s: kind %.32q or job %.32q is not an event's", id, e.Kind, e.JobID)
	}
	at, ok1 := num("at")
	dlv, ok2 := num("delivery")
	retry, ok3 := num("retry_count")
	if !ok1 || !ok2 || !ok3 || at == 0 {
		return Event{}, fmt.Errorf("entry %s: at, delivery or retry_count is not a count", id)
	}
	e.At, e.Delivery, e.RetryCount = msTime(at).UTC(), dlv, int(retry)
	if p := str("progress"); p != "" {
		if !json.Valid([]byte(p)) {
			return Event{}, fmt.Errorf("entry %s: progress is not JSON", id)
		}
		e.Progress = json.RawMessage(p)
	}
	return e, nil
}
