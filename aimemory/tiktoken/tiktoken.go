// Package tiktoken counts tokens for package aimemory exactly as OpenAI's
// models do, with the byte-pair vocabularies of github.com/tiktoken-go/tokenizer
// (cl100k_base, o200k_base, p50k_base, r50k_base), which are compiled into
// the binary: nothing is downloaded at run time, and a program that does
// not import this module does not carry them (several MB each).
//
//	counter, err := tiktoken.ForModel("gpt-4o") // o200k_base
//	...
//	mem, err := aimemory.New(rdb, aimemory.WithCounter(counter))
//
// It is a module of its own (github.com/redschema/redschema/aimemory/tiktoken)
// so that the core library never depends on the vocabularies.
package tiktoken

import (
	"errors"
	"fmt"

	"github.com/tiktoken-go/tokenizer"

	"github.com/redschema/redschema/aimemory"
)

// ErrInvalid marks an unknown encoding or model.
var ErrInvalid = errors.New("tiktoken: invalid argument")

// The encodings New takes.
const (
	Cl100kBase = string(tokenizer.Cl100kBase) // GPT-4, GPT-3.5, text-embedding-ada-002
	O200kBase  = string(tokenizer.O200kBase)  // GPT-4o, GPT-4.1, o1, o3, o4, GPT-5
	P50kBase   = string(tokenizer.P50kBase)   // Codex, text-davinci-002/003
	R50kBase   = string(tokenizer.R50kBase)   // GPT-3 (davinci)
)

// Counter counts the tokens of a text in one encoding. It implements
// aimemory.Counter and is safe for concurrent use.
type Counter struct {
	codec tokenizer.Codec
}

var _ aimemory.Counter = (*Counter)(nil)

// New returns a Counter for encoding (Cl100kBase, O200kBase, P50kBase or
// R50kBase); another name fails with ErrInvalid. The vocabulary is
// decoded from the binary on first use of each encoding.
func New(encoding string) (*Counter, error) {
	c, err := tokenizer.Get(tokenizer.Encoding(encoding))
	if err != nil {
		return nil, fmt.Errorf("%w: encoding %q: %v", ErrInvalid, encoding, err)
	}
	c.SetErrorMode(tokenizer.ErrorModeReplace)
	return &Counter{codec: c}, nil
}

// ForModel returns a Counter for the encoding of an OpenAI model
// ("gpt-4o", "gpt-4", "gpt-3.5-turbo", ...); an unknown model fails with
// ErrInvalid.
func ForModel(model string) (*Counter, error) {
	c, err := tokenizer.ForModel(tokenizer.Model(model))
	if err != nil {
		return nil, fmt.Errorf("%w: model %q: %v", ErrInvalid, model, err)
	}
	c.SetErrorMode(tokenizer.ErrorModeReplace)
	return &Counter{codec: c}, nil
}

// Encoding returns the counter's encoding name ("o200k_base").
func (c *Counter) Encoding() string { return c.codec.GetName() }

// Count returns the number of tokens of text. Invalid UTF-8 is counted as
// U+FFFD, as tiktoken does by default.
func (c *Counter) Count(text string) (int, error) {
	return c.codec.Count(text)
}
