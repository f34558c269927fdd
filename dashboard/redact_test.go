package dashboard

import (
	"strings"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
)

func TestShownKeyHidesSessionIDs(t *testing.T) {
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr(), ContextTimeoutEnabled: true})
	t.Cleanup(func() { _ = c.Close() })
	h, err := New(WithClient(c))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	const id = "d1b3c0ffee"
	for _, key := range []string{"session:user:{42}:" + id, "session:rotation:{42}:" + id, "app:session:user:{42}:" + id} {
		got := h.shownKey(key)
		if strings.Contains(got, id) || !strings.Contains(got, "{42}:ref-"+h.ref("42", id)) {
			t.Errorf("shownKey(%q) = %q: want the session ID replaced by its reference", key, got)
		}
	}
	for _, key := range []string{"user:{42}", "stray:" + id, "queue:{jobs}:jobs"} {
		if got := h.shownKey(key); got != key {
			t.Errorf("shownKey(%q) = %q: want it unchanged", key, got)
		}
	}
}
