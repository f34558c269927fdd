package pubsub

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"
)

// FuzzDecode feeds arbitrary messages to the envelope decoder: it must
// never panic, and a failure must be reported as ErrMalformed with the raw
// text.
func FuzzDecode(f *testing.F) {
	f.Add(`{"event":"uploaded","timestamp":"2026-01-16T10:00:00Z","payload":{"file_id":"f"},"source":"s"}`)
	f.Add(`{"event":1}`)
	f.Add(`not json`)
	type payload struct {
		FileID string `json:"file_id"`
	}
	f.Fuzz(func(t *testing.T, msg string) {
		ev := decode[payload](&redis.Message{Channel: "pubsub:files:uploaded", Payload: msg})
		if ev.Err != nil && (!errors.Is(ev.Err, ErrMalformed) || ev.Raw != msg) {
			t.Fatalf("bad report: %v", ev.Err)
		}
	})
}
