package keys

import (
	"encoding/json"
	"strings"
)

// SchemaEntry is one registered pattern as JSON renders it (see
// Registry.JSON): the same facts as a row of Markdown, in fields a program
// can read.
type SchemaEntry struct {
	// Key is the template under the table's namespace, as Display writes
	// it: prefix, placeholders by name, the hash tag marked.
	Key string `json:"key"`
	// Template is the registered template, without namespace.
	Template string `json:"template"`
	// Type is the Redis type, or "channel".
	Type string `json:"type"`
	// TTLSeconds is the default lifetime (or its bound); 0 for none.
	TTLSeconds float64 `json:"ttl_seconds,omitempty"`
	// TTLNote describes a TTL that varies.
	TTLNote string `json:"ttl_note,omitempty"`
	// Persistent is the reason a key has no TTL.
	Persistent string `json:"persistent,omitempty"`
	// Params are the placeholders, in order; Tag is the one used as the
	// cluster hash tag, if any.
	Params []string `json:"params,omitempty"`
	Tag    string   `json:"tag,omitempty"`
	// DB is the database the table's Layout puts the pattern in (only with
	// a Layout).
	DB *int `json:"db,omitempty"`
	// Owner is the package that writes the key; Area, its part of the
	// keyspace; Purpose, what it is for; Seed, the reference system (and
	// section) it comes from, as Pattern.Seed.
	Owner   string `json:"owner"`
	Area    string `json:"area,omitempty"`
	Purpose string `json:"purpose"`
	Seed    string `json:"seed,omitempty"`
}

// Entries returns the registered patterns as SchemaEntry values, filtered
// and laid out as opt says (the rows Markdown prints).
func (r *Registry) Entries(opt TableOptions) []SchemaEntry {
	var out []SchemaEntry
	for _, t := range r.Templates() {
		p := t.p
		if opt.Owner != "" && p.Owner != opt.Owner {
			continue
		}
		e := SchemaEntry{
			Key: t.Display(opt.Namespace), Template: p.Template, Type: strings.ToLower(string(p.Type)),
			TTLSeconds: p.TTL.Seconds(), TTLNote: p.TTLNote, Persistent: p.Persistent,
			Params: t.Params(), Tag: p.Tag, Owner: p.Owner, Area: string(p.Area), Purpose: p.Purpose, Seed: p.Seed,
		}
		if opt.Layout != nil {
			db := opt.Layout.DB(p.Area)
			e.DB = &db
		}
		out = append(out, e)
	}
	return out
}

// JSON renders the registered patterns as an indented JSON array of
// SchemaEntry, filtered and laid out as opt says.
func (r *Registry) JSON(opt TableOptions) ([]byte, error) {
	return json.MarshalIndent(r.Entries(opt), "", "  ")
}
