package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/redschema/redschema/keys"
)

// audit prints, per database of cs, the patterns with keys or problems
// (every pattern with all), then the problems; it exits 1 when there are
// any. When most keys of a database match no pattern it says under which
// flags they would.
func audit(ctx context.Context, out io.Writer, cs *keys.Clients, ns keys.Namespace, all bool) (int, error) {
	reps, err := library().AuditLayout(ctx, cs, keys.AuditOptions{Namespace: ns})
	if err != nil {
		return 2, err
	}
	var problems, hints []string
	for _, r := range reps {
		table := r.Markdown()
		if all {
			table = r.MarkdownAll()
		}
		fmt.Fprintf(out, "DB %d: %d keys scanned under %q\n\n%s\n", r.DB, r.Scanned, ns.Prefix, table)
		for _, p := range r.Problems() {
			problems = append(problems, fmt.Sprintf("DB %d: %s", r.DB, p))
		}
		if h := hint(r, ns); h != "" {
			hints = append(hints, h)
		}
	}
	if len(problems) > 0 {
		fmt.Fprintf(out, "problems:\n- %s\n", strings.Join(problems, "\n- "))
	} else {
		fmt.Fprintln(out, "no problems")
	}
	for _, h := range hints {
		fmt.Fprintf(out, "\nhint: %s\n", h)
	}
	if len(problems) > 0 {
		return 1, nil
	}
	return 0, nil
}

// hint says, when most keys of r match no pattern under ns, under which
// flags they would (keys.AuditReport.Guesses): "did you mean -prefix ha:?".
// It returns "" when most keys match.
func hint(r *keys.AuditReport, ns keys.Namespace) string {
	if r.Unmatched == 0 || r.Unmatched*2 <= r.Scanned {
		return ""
	}
	s := fmt.Sprintf("DB %d: %d of the %d keys under %s match no pattern", r.DB, r.Unmatched, r.Scanned, flags(ns))
	if len(r.Guesses) == 0 {
		return s + ", nor would they under a longer prefix or the other hash-tag setting: are they this library's keys?"
	}
	g := r.Guesses[0]
	s += fmt.Sprintf("; did you mean %s? (%d of the %d unmatched keys examined match a pattern under it", change(ns, g.Namespace), g.Keys, r.Examined)
	for i, g := range r.Guesses[1:] {
		if i == 2 {
			break
		}
		s += fmt.Sprintf("; %d under %s", g.Keys, change(ns, g.Namespace))
	}
	return s + ")"
}

// flags spells ns as the command-line flags that select it.
func flags(ns keys.Namespace) string {
	s := "-prefix " + quoteArg(ns.Prefix)
	if ns.NoHashTags {
		s += " -no-tags"
	}
	return s
}

// change spells the flags that turn namespace from into to: "-prefix
// ha:", "-no-tags", "-prefix ha: without -no-tags".
func change(from, to keys.Namespace) string {
	var parts []string
	if to.Prefix != from.Prefix {
		parts = append(parts, "-prefix "+quoteArg(to.Prefix))
	}
	switch {
	case to.NoHashTags && !from.NoHashTags:
		parts = append(parts, "-no-tags")
	case !to.NoHashTags && from.NoHashTags:
		parts = append(parts, "without -no-tags")
	}
	return strings.Join(parts, " ")
}

// quoteArg Go-quotes a flag value that a shell would not take as it is,
// or that a terminal would not print as it is (see shown): a guessed
// prefix is a piece of a key name. The quoted form is safe to print, not
// always to paste: a shell reads neither \x1b nor $ as Go does.
func quoteArg(s string) string {
	if s == "" || strings.ContainsAny(s, " \t'\"\\$`*?[]{}|&;<>()#~!") || shown(s) != s {
		return strconv.Quote(s)
	}
	return s
}
