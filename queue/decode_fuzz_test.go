package queue

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// FuzzDecoders feeds arbitrary stored data to every decoder of the
// package: none may panic, and every failure must be a corrupt-data error
// naming the key.
func FuzzDecoders(f *testing.F) {
	f.Add(`{"id":"a","payload":{"workflow_id":"w"},"priority":1,"created_at":"2026-01-16T10:00:00Z","retry_count":0,"max_retries":5}`, "1,0,5,high,")
	f.Add(`{"id":"a","error":"x","failed_at":1,"retry_count":1,"max_retries":0,"level":"low","job":null}`, "0,0,0,low,boom, with commas")
	f.Add(`{`, `9,x,5,normal,`)
	f.Add(`{"payload":[1,2]}`, `,,,,`)
	f.Add(`{"due":0,"spec":"*/5 * * * *","tz":"Europe/Paris","missed":"skip","payload":"e30="}`, "")
	f.Add(`{"due":1,"spec":"@every 1s","missed":"catch_up_once","payload":null}`, "")
	type payload struct {
		WorkflowID string `json:"workflow_id"`
	}
	q, err := New[payload](redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), "fuzz")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body, state string) {
		check := func(err error) {
			if err == nil {
				return
			}
			var ce *keys.CorruptError
			if !errors.As(err, &ce) || ce.Key == "" {
				t.Fatalf("error %v is not a corrupt-data error naming the key", err)
			}
		}
		var j Job[payload]
		check(q.decodeBody(q.jobs, body, &j))
		var in Info[payload]
		check(q.decodeDead(body, &in))
		_, _, _, _, _, err := parseState(q.state, state)
		check(err)
		if sd := q.decodeSchedule("fuzz", state, body); sd.err == nil {
			sd.c.next(time.Now()) // a definition that decodes has a usable spec
		} else {
			check(sd.err)
		}
	})
}
