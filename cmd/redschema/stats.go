package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/redschema/redschema/keys"
)

// stats prints, per database, each pattern's key count, memory (measured
// on up to opt.Sample keys per pattern, the rest estimated from them),
// TTL health and wrong types, the keys that match no pattern and the
// largest keys probed. It reports; audit is the check that exits 1.
func stats(ctx context.Context, out io.Writer, cs *keys.Clients, opt keys.AuditOptions, owner string) (int, error) {
	reps, err := library().AuditLayout(ctx, cs, opt)
	if err != nil {
		return 2, err
	}
	for _, r := range reps {
		var total int64
		fmt.Fprintf(out, "DB %d: %d keys scanned under %q\n\n", r.DB, r.Scanned, opt.Namespace.Prefix)
		fmt.Fprintf(out, "| Key pattern | Package | Keys | Memory | Sampled | Avg bytes | No TTL | Wrong type |\n|---|---|---|---|---|---|---|---|\n")
		rows := append([]keys.PatternStats(nil), r.Patterns...)
		sort.SliceStable(rows, func(i, j int) bool {
			a, b := rows[i].Template, rows[j].Template
			if a.Pattern().Owner != b.Pattern().Owner {
				return a.Pattern().Owner < b.Pattern().Owner
			}
			return a.String() < b.String()
		})
		for _, s := range rows {
			if !s.Active() || (owner != "" && s.Template.Pattern().Owner != owner) {
				continue
			}
			est := s.EstBytes()
			total += est
			mem := human(est)
			if s.Sampled < s.Keys {
				mem = "~" + mem
			}
			fmt.Fprintf(out, "| `%s` | %s | %d | %s | %d | %d | %d | %d |\n",
				s.Template, s.Template.Pattern().Owner, s.Keys, mem, s.Sampled, s.AvgBytes(), s.NoTTL, s.WrongType)
		}
		fmt.Fprintf(out, "| (unmatched) | | %d | | | | | |\n\nmemory of matched keys: %s\n", r.Unmatched, human(total))
		if len(r.UnmatchedKeys) > 0 {
			fmt.Fprintf(out, "\nkeys matching no pattern (first %d):\n", len(r.UnmatchedKeys))
			for _, k := range r.UnmatchedKeys {
				fmt.Fprintf(out, "- %s\n", shown(k))
			}
		}
		if h := hint(r, opt.Namespace); h != "" {
			fmt.Fprintf(out, "\nhint: %s\n", h)
		}
		if len(r.Largest) > 0 {
			fmt.Fprintf(out, "\nlargest keys:\n\n| Key | Pattern | Bytes |\n|---|---|---|\n")
			for _, k := range r.Largest {
				if owner != "" && k.Template.Pattern().Owner != owner {
					continue
				}
				fmt.Fprintf(out, "| %s | `%s` | %d |\n", shownCode(k.Key), k.Template, k.Bytes)
			}
		}
		if p := r.Problems(); len(p) > 0 {
			fmt.Fprintf(out, "\nTTL health and types:\n")
			for _, s := range p {
				fmt.Fprintf(out, "- %s\n", s)
			}
		}
		fmt.Fprintln(out)
	}
	return 0, nil
}

// shown is key as the text output prints it: as it is when every rune
// is printable, Go-quoted otherwise, so that a key holding a terminal's
// escape sequence (any client may write one) is printed, never obeyed.
func shown(key string) string {
	for _, r := range key {
		if !unicode.IsPrint(r) || r == utf8.RuneError {
			return strconv.Quote(key)
		}
	}
	return key
}

// shownCode is key as a Markdown table cell: shown, in a code span, with
// a pipe (which would end the cell) escaped; a key holding backticks is
// fenced by one more backtick than its longest run of them, with spaces.
func shownCode(key string) string {
	s := strings.ReplaceAll(shown(key), "|", `\|`)
	run, longest := 0, 0
	for _, r := range s {
		if r == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	if longest == 0 {
		return "`" + s + "`"
	}
	fence := strings.Repeat("`", longest+1)
	return fence + " " + s + " " + fence
}

// human formats a byte count: 512 B, 1.5 KiB, 2.0 MiB.
func human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
