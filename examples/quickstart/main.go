// Command quickstart shows three redschema packages serving one login
// flow: a rate limit on login attempts per client IP, a lock so that one
// user's logins run one at a time, and a session that the client then
// presents. It ends by auditing the keyspace against the registry.
//
//	go run ./examples/quickstart                 # embedded Redis
//	REDIS_URL=redis://127.0.0.1:6379/0 go run ./examples/quickstart
//	REDIS_URL=127.0.0.1:7001,127.0.0.1:7002 go run ./examples/quickstart
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strconv"
	"time"

	"github.com/redschema/redschema/connect"
	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/lock"
	"github.com/redschema/redschema/ratelimit"
	"github.com/redschema/redschema/session"
)

func main() {
	if err := run(os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// run tells out what each step does and what came of it.
func run(out io.Writer) error {
	ctx := context.Background()
	rdb, closeRedis, err := connect.FromEnv(ctx, out)
	if err != nil {
		return err
	}
	defer closeRedis()
	// A namespace of its own per run keeps runs on a shared server apart.
	ns := keys.Namespace{Prefix: "quickstart-" + strconv.FormatInt(time.Now().UnixNano(), 36) + ":"}

	limits, err := ratelimit.New(rdb, ratelimit.Policy{
		{Algorithm: ratelimit.SlidingCounter, Limit: ratelimit.PerMinute(3)},
	}, ratelimit.WithNamespace(ns))
	if err != nil {
		return err
	}
	locks, err := lock.New(rdb, lock.WithNamespace(ns), lock.WithOwner("quickstart"))
	if err != nil {
		return err
	}
	sessions, err := session.New(rdb, session.WithNamespace(ns))
	if err != nil {
		return err
	}

	// Five login attempts from one address: the rate limit admits three.
	const clientIP = "203.0.113.7"
	fmt.Fprintf(out, "Five login attempts for user 42 from %s, which may try 3 times a minute:\n", clientIP)
	var handle string
	for attempt := 1; attempt <= 5; attempt++ {
		res, err := limits.Allow(ctx, clientIP)
		if err != nil {
			return err
		}
		if !res.Allowed {
			fmt.Fprintf(out, "attempt %d: refused by the rate limit; the address may try again in %v\n", attempt, res.RetryAfter.Round(time.Second))
			continue
		}
		fmt.Fprintf(out, "attempt %d: allowed by the rate limit (%d more this minute)\n", attempt, res.Remaining)
		h, err := login(ctx, out, locks, sessions, "42", attempt == 1)
		if err != nil {
			return err
		}
		handle = h
	}

	// The client presents its handle; the server finds the session.
	userID, sessionID, err := session.ParseHandle(handle)
	if err != nil {
		return err
	}
	sess, err := sessions.Get(ctx, userID, sessionID)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "The client sends its last session handle: it is user %s's session, which expires in %v unless used again.\n",
		sess.UserID, time.Until(sess.ExpiresAt).Round(time.Minute))

	// Listing shows IDs that can revoke a session but never log in.
	list, err := sessions.List(ctx, "42")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "User 42 has %d sessions, one per successful login.\n", len(list))
	n, err := sessions.RevokeAll(ctx, "42")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "User 42 logs out everywhere: %d sessions revoked.\n", n)
	_, err = sessions.Get(ctx, userID, sessionID)
	switch {
	case errors.Is(err, session.ErrNotFound):
		fmt.Fprintln(out, "The client sends the same handle again: refused, the session no longer exists.")
	case err != nil:
		return err
	default:
		return errors.New("the revoked session still authenticates")
	}

	// Every key written is one the registry knows, with its TTL.
	reg, err := keys.Compose(lock.Schema(), ratelimit.Schema(), session.Schema())
	if err != nil {
		return err
	}
	rep, err := reg.Audit(ctx, rdb, keys.AuditOptions{Namespace: ns})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Audit of the keys this run left in Redis: %d keys, each of a known pattern with its TTL; %d problems.\n",
		rep.Scanned, len(rep.Problems()))
	for _, p := range rep.Problems() {
		fmt.Fprintln(out, "  ", p)
	}
	if len(rep.Problems()) > 0 {
		return errors.New("the keyspace does not match the schema")
	}
	return nil
}

// login creates a session for userID while holding the user's session
// lock, so two logins of one user never interleave. With contend, it
// shows a second login of the same user turned away while the lock is
// held.
func login(ctx context.Context, out io.Writer, locks *lock.Client, sessions *session.Store, userID string, contend bool) (string, error) {
	ttl := locks.DefaultTTL(lock.UserSession)
	l, err := locks.Acquire(ctx, lock.UserSession, userID, ttl)
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Release(ctx) }()
	fmt.Fprintf(out, "  took the lock on user %s's logins (it frees itself after %v should this process die)\n", userID, ttl)
	if contend {
		_, err := locks.TryAcquire(ctx, lock.UserSession, userID, ttl)
		switch {
		case errors.Is(err, lock.ErrNotObtained):
			fmt.Fprintf(out, "  a second login of user %s at the same moment does not get the lock: it must wait\n", userID)
		case err != nil:
			return "", err
		default:
			return "", errors.New("the lock was taken twice")
		}
	}
	_, tok, err := sessions.Create(ctx, session.Info{UserID: userID, Email: "ada@example.com"})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "  created a session for user %s and released the lock\n", userID)
	return tok.Handle, nil
}
