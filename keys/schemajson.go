package keys

import (
	"encoding/json"
	"strings"
)

// schemaEntry is one registered pattern as JSON renders it: the same
// facts as a row of Markdown, in fields a program can read.
type schemaEntry struct {
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

// entries returns the registered patterns as schemaEntry values, filtered
// and laid out as opt says (the rows Markdown prints).
func (r *Registry) entries(opt TableOptions) []schemaEntry {
	var out []schemaEntry
	for _, t := range r.Templates() {
		p := t.p
		if opt.Owner != "" && p.Owner != opt.Owner {
			continue
		}
		e := schemaEntry{
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

// JSON renders the registered patterns, filtered and laid out as opt
// says, as an indented JSON array of objects, one per row of Markdown,
// with the fields:
//
//   - key: the template under opt's namespace, as Template.Display writes
//     it (prefix, placeholders by name, the hash tag marked);
//   - template: the template, without namespace;
//   - type: the Redis type, or "channel";
//   - ttl_seconds: the default lifetime (or its bound), omitted for none;
//   - ttl_note: how a varying TTL varies; persistent: why a key has none;
//   - params: the placeholders in order; tag: the hash-tag placeholder;
//   - db: the database opt.Layout puts the pattern in (with a Layout);
//   - owner, area, purpose, seed: as in the Pattern.
//
// Optional fields are omitted when empty.
func (r *Registry) JSON(opt TableOptions) ([]byte, error) {
	return json.MarshalIndent(r.entries(opt), "", "  ")
}
