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
	if err := run(); err != nil {
		log.Fatal(err)
	}
}

func run() error {
	ctx := context.Background()
	rdb, closeRedis, err := connect.FromEnv(ctx, os.Stdout)
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

	// Five login attempts from one address: three are admitted.
	const clientIP = "203.0.113.7"
	var handle string
	for attempt := 1; attempt <= 5; attempt++ {
		res, err := limits.Allow(ctx, clientIP)
		if err != nil {
			return err
		}
		if !res.Allowed {
			fmt.Printf("attempt %d: refused, retry in %v\n", attempt, res.RetryAfter.Round(time.Second))
			continue
		}
		h, err := login(ctx, locks, sessions, "42")
		if err != nil {
			return err
		}
		handle = h
		fmt.Printf("attempt %d: logged in (%d left this minute)\n", attempt, res.Remaining)
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
	fmt.Printf("request with the last handle: user %s, expires in %v\n", sess.UserID, time.Until(sess.ExpiresAt).Round(time.Minute))

	// Listing shows IDs that can revoke a session but never log in.
	list, err := sessions.List(ctx, "42")
	if err != nil {
		return err
	}
	fmt.Printf("user 42 has %d sessions\n", len(list))
	n, err := sessions.RevokeAll(ctx, "42")
	if err != nil {
		return err
	}
	_, err = sessions.Get(ctx, userID, sessionID)
	fmt.Printf("revoked %d; the handle now: %v\n", n, errors.Is(err, session.ErrNotFound))

	// Every key written is one the registry knows, with its TTL.
	rep, err := keys.Default().Audit(ctx, rdb, keys.AuditOptions{Namespace: ns})
	if err != nil {
		return err
	}
	fmt.Printf("audit: %d keys, %d problems\n", rep.Scanned, len(rep.Problems()))
	for _, p := range rep.Problems() {
		fmt.Println("  ", p)
	}
	if len(rep.Problems()) > 0 {
		return errors.New("the keyspace does not match the schema")
	}
	return nil
}

// login creates a session for userID while holding the user's session
// lock, so two logins of one user never interleave.
func login(ctx context.Context, locks *lock.Client, sessions *session.Store, userID string) (string, error) {
	l, err := locks.Acquire(ctx, lock.UserSession, userID, locks.DefaultTTL(lock.UserSession))
	if err != nil {
		return "", err
	}
	defer func() { _ = l.Release(ctx) }()
	_, tok, err := sessions.Create(ctx, session.Info{UserID: userID, Email: "ada@example.com"})
	if err != nil {
		return "", err
	}
	return tok.Handle, nil
}
