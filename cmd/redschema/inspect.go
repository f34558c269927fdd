package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/redschema/redschema/keys"
)

// inspection is the JSON form of one inspected key.
type inspection struct {
	Key      string            `json:"key"`
	Pattern  string            `json:"pattern"`
	Owner    string            `json:"owner"`
	Area     string            `json:"area"`
	DB       int               `json:"db"`
	Args     map[string]string `json:"args"`
	Type     string            `json:"type"`
	TTL      string            `json:"ttl"`
	TTLMs    int64             `json:"ttl_ms"`
	Expected string            `json:"expected_ttl"`
	Value    any               `json:"value,omitempty"`
	Error    string            `json:"error,omitempty"`
}

// inspect prints, for each key, the pattern and package that own it, its
// type and TTL, and its value as the owning package decodes it. It exits 1
// when a key does not exist, is unowned or does not decode.
func inspect(ctx context.Context, out io.Writer, cs *keys.Clients, ns keys.Namespace, keyArgs []string, asJSON bool) (int, error) {
	reg := library()
	var errs []error
	var all []inspection
	for _, key := range keyArgs {
		t, _, ok := reg.Match(ns, key)
		if !ok {
			errs = append(errs, unowned(ctx, cs, ns, key))
			continue
		}
		db := cs.DB(t.Pattern().Area)
		in, err := reg.Inspect(ctx, cs.ForDB(db), ns, key, "")
		if errors.Is(err, keys.ErrNotFound) {
			err = &notExist{key: key, where: dbText(cs, db),
				what: fmt.Sprintf(" (a %q key of package %s)", t.String(), t.Pattern().Owner)}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		j := inspection{
			Key: key, Pattern: in.Template.String(), Owner: in.Template.Pattern().Owner,
			Area: string(in.Template.Pattern().Area), DB: db, Args: map[string]string{},
			Type: string(in.Type), TTL: "none", TTLMs: -1, Expected: in.Template.TTLText(), Value: in.Value,
		}
		for i, p := range in.Template.Params() {
			j.Args[p] = in.Args[i]
		}
		if in.TTL >= 0 {
			j.TTL, j.TTLMs = in.TTL.Round(time.Millisecond).String(), in.TTL.Milliseconds()
		}
		if in.DecodeErr != nil {
			j.Error = in.DecodeErr.Error()
			errs = append(errs, in.DecodeErr)
		}
		all = append(all, j)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return 2, err
		}
	} else {
		for _, j := range all {
			if err := printInspection(out, j); err != nil {
				return 2, err
			}
		}
	}
	if len(errs) > 0 {
		return 1, errors.Join(errs...)
	}
	return 0, nil
}

func printInspection(out io.Writer, j inspection) error {
	var args []string
	for k, v := range j.Args {
		args = append(args, fmt.Sprintf("%s=%q", k, v))
	}
	sort.Strings(args)
	fmt.Fprintf(out, "key:      %s\npattern:  %s (package %s, area %s, DB %d)\n", shown(j.Key), j.Pattern, j.Owner, j.Area, j.DB)
	if len(args) > 0 {
		fmt.Fprintf(out, "args:     %s\n", strings.Join(args, " "))
	}
	fmt.Fprintf(out, "type:     %s\nttl:      %s (pattern: %s)\n", j.Type, j.TTL, j.Expected)
	if j.Error != "" {
		_, err := fmt.Fprintf(out, "value:    not decoded: %s\n\n", j.Error)
		return err
	}
	b, err := json.MarshalIndent(j.Value, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "value:    %s\n\n", b)
	return err
}

// unowned explains a key no pattern owns under ns: a pub/sub channel's
// name, a key that does not exist (in any database of cs), or one that
// exists but belongs to no package, with the flags under which it would
// ("did you mean -prefix ha:?").
func unowned(ctx context.Context, cs *keys.Clients, ns keys.Namespace, key string) error {
	reg := library()
	if _, _, isChannel := reg.MatchChannel(ns, key); isChannel {
		_, err := reg.Inspect(ctx, cs.ForDB(cs.DBs()[0]), ns, key, "") // says which channel
		return err
	}
	var in []int
	for _, db := range cs.DBs() {
		n, err := cs.ForDB(db).Exists(ctx, key).Result()
		if err != nil {
			return fmt.Errorf("inspect %q: %w", key, err)
		}
		if n > 0 {
			in = append(in, db)
		}
	}
	if len(in) == 0 {
		return &notExist{key: key, where: dbsText(cs)}
	}
	err := fmt.Errorf("%w: %q under %s%s", keys.ErrUnowned, key, flags(ns), dbText(cs, in[0]))
	if g, ok := reg.Guess(ns, key); ok {
		err = fmt.Errorf("%w; did you mean %s?", err, change(ns, g))
	}
	return err
}

// notExist is the error for a key that does not exist. It matches
// keys.ErrNotFound.
type notExist struct {
	key   string
	where string // " in DB 3", or "" on a cluster
	what  string // the pattern that would own it, or ""
}

func (e *notExist) Error() string {
	return fmt.Sprintf("key %q does not exist%s%s", e.key, e.where, e.what)
}

func (e *notExist) Unwrap() error { return keys.ErrNotFound }

// dbText is " in DB n", or "" on a cluster, which has one database.
func dbText(cs *keys.Clients, db int) string {
	if cs.Cluster() {
		return ""
	}
	return fmt.Sprintf(" in DB %d", db)
}

// dbsText is dbText for every database of cs: " in DB 3", or " in any of
// DBs 0, 1, 2".
func dbsText(cs *keys.Clients) string {
	dbs := cs.DBs()
	if cs.Cluster() || len(dbs) == 1 {
		return dbText(cs, dbs[0])
	}
	s := make([]string, len(dbs))
	for i, db := range dbs {
		s[i] = fmt.Sprint(db)
	}
	return " in any of DBs " + strings.Join(s, ", ")
}
