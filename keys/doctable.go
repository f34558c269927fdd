package keys

import (
	"strings"
	"unicode/utf8"
)

// DocTable renders owner's patterns as a table of aligned columns (key
// pattern, type, TTL, purpose), one line per pattern after a header line,
// for a package doc comment: indented by the caller, go doc and
// pkg.go.dev show it as it is, a table, where a Markdown table would be
// reflowed into one paragraph. Channels come after keys.
func (r *Registry) DocTable(owner string) string {
	rows := [][4]string{{"Key pattern", "Type", "TTL", "Purpose"}}
	var chans [][4]string
	for _, t := range r.Owned(owner) {
		row := [4]string{t.Display(Namespace{}), strings.ToUpper(string(t.p.Type)), unescapeCell(t.TTLText()), t.p.Purpose}
		if t.IsChannel() {
			row[2] = "-"
			chans = append(chans, row)
			continue
		}
		rows = append(rows, row)
	}
	rows = append(rows, chans...)
	var width [3]int
	for _, r := range rows {
		for i := range width {
			width[i] = max(width[i], utf8.RuneCountInString(r[i]))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i := range width {
			b.WriteString(r[i])
			b.WriteString(strings.Repeat(" ", width[i]-utf8.RuneCountInString(r[i])+2))
		}
		b.WriteString(r[3])
		b.WriteByte('\n')
	}
	return b.String()
}

// unescapeCell undoes the Markdown escaping of TTLText.
func unescapeCell(s string) string { return strings.ReplaceAll(s, `\|`, "|") }
