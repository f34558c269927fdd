package main

import (
	"strings"
	"testing"

	"github.com/redschema/redschema/connect/connecttest"
)

// TestRun runs the program on the backend the test suite runs on (the
// embedded Redis unless REDIS_ADDR or REDIS_CLUSTER_ADDRS names one): it
// says in words what each step did, the lock included, and it stops in
// order.
func TestRun(t *testing.T) {
	t.Setenv("REDIS_URL", connecttest.URL(0))
	var out strings.Builder
	stopped := connecttest.CheckShutdown(t)
	if err := run(&out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	stopped()
	for _, want := range []string{
		"attempt 1: allowed by the rate limit (2 more this minute)\n",
		"  took the lock on user 42's logins (it frees itself after 5s should this process die)\n",
		"  a second login of user 42 at the same moment does not get the lock: it must wait\n",
		"  created a session for user 42 and released the lock\n",
		"attempt 4: refused by the rate limit; the address may try again in ",
		"User 42 has 3 sessions, one per successful login.\n",
		"User 42 logs out everywhere: 3 sessions revoked.\n",
		"The client sends the same handle again: refused, the session no longer exists.\n",
		"; 0 problems.\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
