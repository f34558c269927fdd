package queue

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The hand-written job envelope is byte for byte what json.Marshal
// writes, for every ID (plain or escaped) and payload.
func TestEnvelopeIsJSONMarshal(t *testing.T) {
	type payload struct {
		WorkflowID string            `json:"workflow_id"`
		Data       map[string]string `json:"data,omitempty"`
		P          *int              `json:"p"`
	}
	q, err := New[payload](redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true}), "env")
	require.NoError(t, err)
	created := []time.Time{
		time.Date(2026, 1, 16, 10, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 16, 10, 0, 0, 123456789, time.FixedZone("x", 3600)),
		time.Now(),
	}
	ids := []string{newID(), "job-1", "a b/c@d.e_f", "quote\"", "back\\slash", "<html>&", "ünï", "tab\t", "x{y}:z"}
	payloads := []payload{{}, {WorkflowID: "<w>&\u2028", Data: map[string]string{"b": "2", "a": "1"}}}
	for _, id := range ids {
		for _, pl := range payloads {
			for _, c := range created {
				for _, p := range []Priority{Low, Normal, High} {
					got, err := q.encode("enqueue", id, pl, p, c, 7)
					require.NoError(t, err)
					data, err := json.Marshal(pl)
					require.NoError(t, err)
					want, err := json.Marshal(wireJob{ID: id, Payload: data, Priority: int(p), CreatedAt: c.UTC(), MaxRetries: 7})
					require.NoError(t, err)
					require.Equal(t, string(want), got)
				}
			}
		}
	}
}
