package codec

import (
	"encoding/json"

	"github.com/redschema/redschema/keys"
)

// Codec turns values into bytes and back.
type Codec interface {
	Marshal(v any) ([]byte, error)
	Unmarshal(data []byte, v any) error
}

// JSON encodes with encoding/json. The zero value is ready to use.
type JSON struct{}

// Marshal implements Codec.
func (JSON) Marshal(v any) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements Codec.
func (JSON) Unmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Decode unmarshals data read from key into v. A failure is a
// *keys.CorruptError naming the key (errors.Is(err, keys.ErrCorrupt)).
// A nil Codec means JSON.
func Decode(c Codec, key string, data []byte, v any) error {
	if c == nil {
		c = JSON{}
	}
	return keys.Corrupt(key, c.Unmarshal(data, v))
}
