package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/keys"
)

// urlForms is what -url accepts, for its error messages.
const urlForms = "want redis://host:port/db, rediss://host:port/db, host:port, or host:port,host:port,... (a cluster)"

// pingTimeout bounds the check that every database answers.
const pingTimeout = 10 * time.Second

// connect opens the clients of -url (or -cluster, or $REDIS_URL): one per
// database of the layout, the URL's database holding the areas the
// layout does not name (all of them without -layout), and checks that
// each answers.
func connect(ctx context.Context, o *options, lay keys.Layout) (*keys.Clients, error) {
	opts, err := target(o)
	if err != nil {
		return nil, err
	}
	cs, err := lay.Clients(opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", describe(opts), err)
	}
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	for _, db := range cs.DBs() {
		err := keys.ForEachNode(ctx, cs.ForDB(db), func(ctx context.Context, n redis.UniversalClient) error {
			return n.Ping(ctx).Err()
		})
		if err != nil {
			_ = cs.Close()
			return nil, reachErr(cs, db, err)
		}
	}
	return cs, nil
}

// target returns the client options -url, -cluster or $REDIS_URL name.
func target(o *options) (*redis.UniversalOptions, error) {
	u := o.url
	switch {
	case o.cluster != "" && u != "":
		return nil, errors.New("-url and -cluster both given: use one")
	case o.cluster != "":
		addrs, err := hostPorts("-cluster", o.cluster)
		if err != nil {
			return nil, err
		}
		return &redis.UniversalOptions{Addrs: addrs, IsClusterMode: true, ContextTimeoutEnabled: true}, nil
	case u == "":
		u = os.Getenv("REDIS_URL")
		if u == "" {
			return nil, errors.New("no Redis: give -url or set REDIS_URL (" + urlForms + ")")
		}
		return parseURL("REDIS_URL", u)
	}
	return parseURL("-url", u)
}

// parseURL reads -url (or REDIS_URL: name says which, for messages): a
// redis:// or rediss:// URL (one server and its database), host:port
// (one server, DB 0), or a comma-separated list of host:port (a cluster).
func parseURL(name, s string) (*redis.UniversalOptions, error) {
	if scheme, _, ok := strings.Cut(s, "://"); ok {
		if scheme != "redis" && scheme != "rediss" {
			return nil, fmt.Errorf("%s %s: scheme %q: %s", name, redact(s), scheme, urlForms)
		}
		r, err := redis.ParseURL(s)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %v (%s)", name, redact(s), strings.TrimPrefix(err.Error(), "redis: "), urlForms)
		}
		return &redis.UniversalOptions{
			Addrs: []string{r.Addr}, DB: r.DB, ClientName: r.ClientName, Protocol: r.Protocol,
			Username: r.Username, Password: r.Password, TLSConfig: r.TLSConfig,
			MaxRetries: r.MaxRetries, MinRetryBackoff: r.MinRetryBackoff, MaxRetryBackoff: r.MaxRetryBackoff,
			DialTimeout: r.DialTimeout, ReadTimeout: r.ReadTimeout, WriteTimeout: r.WriteTimeout,
			PoolFIFO: r.PoolFIFO, PoolSize: r.PoolSize, PoolTimeout: r.PoolTimeout,
			MinIdleConns: r.MinIdleConns, MaxIdleConns: r.MaxIdleConns, MaxActiveConns: r.MaxActiveConns,
			ConnMaxIdleTime: r.ConnMaxIdleTime, ConnMaxLifetime: r.ConnMaxLifetime,
			ContextTimeoutEnabled: true,
		}, nil
	}
	addrs, err := hostPorts(name, s)
	if err != nil {
		return nil, err
	}
	return &redis.UniversalOptions{Addrs: addrs, IsClusterMode: len(addrs) > 1, ContextTimeoutEnabled: true}, nil
}

// hostPorts splits a comma-separated list of host:port, the value of
// flagName (or REDIS_URL).
func hostPorts(flagName, s string) ([]string, error) {
	want := urlForms
	if flagName == "-cluster" {
		want = "want host:port,host:port,..."
	}
	parts := strings.Split(s, ",")
	var out []string
	for _, a := range parts {
		a = strings.TrimSpace(a)
		host, port, err := net.SplitHostPort(a)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			if len(parts) == 1 {
				return nil, fmt.Errorf("%s %q: %s", flagName, s, want)
			}
			return nil, fmt.Errorf("%s %q: %q is not host:port: %s", flagName, s, a, want)
		}
		out = append(out, a)
	}
	return out, nil
}

// redact hides a URL's password.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return strconv.Quote(s)
	}
	return u.Redacted()
}

// describe names the server or cluster of opts, for messages.
func describe(opts *redis.UniversalOptions) string {
	if len(opts.Addrs) > 1 || opts.IsClusterMode {
		return "cluster " + strings.Join(opts.Addrs, ",")
	}
	return opts.Addrs[0]
}

// where names database db of cs's server for messages: its address and,
// when there are databases, the number.
func where(cs *keys.Clients, db int) string {
	c := cs.ForDB(db)
	if cc, ok := c.(*redis.ClusterClient); ok {
		return "cluster " + strings.Join(cc.Options().Addrs, ",")
	}
	if sc, ok := c.(*redis.Client); ok {
		return fmt.Sprintf("%s DB %d", sc.Options().Addr, db)
	}
	return fmt.Sprintf("DB %d", db)
}

// reachErr turns the failure of database db's check into one line: the
// address and the cause ("cannot reach 127.0.0.1:6461: connection
// refused"), or the server's refusal ("127.0.0.1:6379 DB 99: ERR DB index
// is out of range").
func reachErr(cs *keys.Clients, db int, err error) error {
	w := where(cs, db)
	if why, ok := netCause(err); ok {
		if !cs.Cluster() {
			w = strings.TrimSuffix(w, fmt.Sprintf(" DB %d", db))
		}
		return fmt.Errorf("cannot reach %s: %s", w, why)
	}
	return fmt.Errorf("%s: %v", w, err)
}

// netCause says in a few words why a network operation failed, and
// whether err is such a failure.
func netCause(err error) (string, bool) {
	var dns *net.DNSError
	var errno syscall.Errno
	var op *net.OpError
	switch {
	case err == nil:
		return "", false
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "no such host " + dns.Name, true
		}
		return dns.Err, true
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded):
		return "no answer in time", true
	case errors.As(err, &errno):
		return errno.Error(), true
	case errors.As(err, &op):
		return op.Err.Error(), true
	case errors.Is(err, redis.ErrClosed), errors.Is(err, syscall.EPIPE):
		return err.Error(), true
	}
	return "", false
}

// shorten makes a network failure met while a command reads Redis one
// line naming the server, as connect does; other errors are returned as
// they are.
func shorten(err error, cs *keys.Clients) error {
	why, ok := netCause(err)
	if !ok {
		return err
	}
	db := cs.DBs()[0]
	return fmt.Errorf("lost the connection to %s: %s", strings.TrimSuffix(where(cs, db), fmt.Sprintf(" DB %d", db)), why)
}
