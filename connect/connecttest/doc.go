// Package connecttest runs programs built on connect against the Redis a
// test suite runs on, as this repository's example programs' tests do:
// the 3-master cluster of REDIS_CLUSTER_ADDRS, else the server of
// REDIS_ADDR, else (neither set) connect's embedded server. Each test
// gets key prefixes of its own, whose keys are deleted when it ends.
//
//	func TestRun(t *testing.T) {
//		prefix := connecttest.Use(t, "myapp", 1) // REDIS_URL set for the program
//		var out connecttest.Buffer
//		if err := run(context.Background(), prefix, &out); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// It is a package for tests (it imports testing), as net/http/httptest
// is; programs never import it.
//
// # Guarantees
//
//   - Each prefix ("{name}-test-{8 hex digits}:") carries 32 random bits,
//     so tests sharing one server keep to keys of their own.
//   - A test's keys are deleted when it ends, with SCAN on every node (never
//     KEYS, FLUSHDB or FLUSHALL: the server may be shared).
//   - The embedded server goes away with the program; nothing is deleted
//     from it.
//   - CheckShutdown fails the test when the program left a goroutine
//     running or closed its client under a call in flight (go-redis logs
//     "Unexpected conn ... state changed by hook to CLOSED").
package connecttest
