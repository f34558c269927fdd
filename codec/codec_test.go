package codec_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redschema/redschema/codec"
	"github.com/redschema/redschema/keys"
)

func TestDecode(t *testing.T) {
	var v struct{ A int }
	require.NoError(t, codec.Decode(nil, "k", []byte(`{"A":3}`), &v))
	assert.Equal(t, 3, v.A)
	err := codec.Decode(codec.JSON{}, "presence:{42}", []byte(`{"A":`), &v)
	require.ErrorIs(t, err, keys.ErrCorrupt)
	var se *json.SyntaxError
	assert.True(t, errors.As(err, &se), "the decoder's error is kept")
	assert.Contains(t, err.Error(), `"presence:{42}"`)
}

func ExampleDecode() {
	var p struct {
		Status string `json:"status"`
	}
	err := codec.Decode(codec.JSON{}, "presence:{42}", []byte("not json"), &p)
	fmt.Println(errors.Is(err, keys.ErrCorrupt))
	fmt.Println(err)
	// Output:
	// true
	// keys: corrupt value at "presence:{42}": invalid character 'o' in literal null (expecting 'u')
}
