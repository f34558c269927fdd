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
// when a key is unowned, missing or does not decode.
func inspect(ctx context.Context, out io.Writer, cs *keys.Clients, ns keys.Namespace, keyArgs []string, asJSON bool) (int, error) {
	reg := keys.Default()
	var errs []error
	var all []inspection
	for _, key := range keyArgs {
		t, _, ok := reg.Match(ns, key)
		c := cs.ForDB(0)
		db := 0
		if ok {
			c = cs.For(t.Pattern().Area)
			for _, d := range cs.DBs() {
				if cs.ForDB(d) == c {
					db = d
				}
			}
		}
		in, err := reg.Inspect(ctx, c, ns, key)
		if err != nil {
			if errors.Is(err, keys.ErrNotFound) && !cs.Cluster() {
				err = fmt.Errorf("%w in DB %d", err, db)
			}
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
	fmt.Fprintf(out, "key:      %s\npattern:  %s (package %s, area %s, DB %d)\n", j.Key, j.Pattern, j.Owner, j.Area, j.DB)
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
