package pubsub

import (
	"errors"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/sub"
	"github.com/redschema/redschema/keys"
)

// FuzzDecode feeds arbitrary messages to the envelope decoder: it must
// never panic, and a failure must be reported as ErrMalformed, matching
// keys.ErrCorrupt, with the raw text.
func FuzzDecode(f *testing.F) {
	f.Add(`{"event":"uploaded","timestamp":"2026-01-16T10:00:00Z","payload":{"file_id":"f"},"source":"s"}`)
	f.Add(`{"event":1}`)
	f.Add(`not json`)
	f.Add(`{"payload":"bm90IGpzb24="}`)
	b, err := New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), WithMaxMessage(64))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		m, err := decode[FileUploaded](b, msg)
		var e Event[FileUploaded]
		if err != nil {
			e = event(b, sub.Msg[message[FileUploaded]]{Channel: "pubsub:files:uploaded", Raw: msg, Err: keys.Corrupt("pubsub:files:uploaded", err)})
		} else {
			e = event(b, sub.Msg[message[FileUploaded]]{Channel: "pubsub:files:uploaded", Raw: msg, Value: m})
		}
		if e.Err != nil && (!errors.Is(e.Err, ErrMalformed) || !errors.Is(e.Err, keys.ErrCorrupt) || len(e.Raw) > 64) {
			t.Fatalf("bad report: %v", e.Err)
		}
		if err == nil && len(msg) > 64 {
			t.Fatalf("a message above the limit was decoded")
		}
	})
}
