package session

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHandleEntropy draws 100k handles: all secrets unique, 43 URL-safe
// characters decoding to 256 bits, each bit set about half of the time;
// the IDs they map to are unique, 22 characters, and differ from the
// secret.
func TestHandleEntropy(t *testing.T) {
	const n = 100_000
	secrets := make(map[string]struct{}, n)
	ids := make(map[string]struct{}, n)
	var ones [secretBytes * 8]int
	for i := 0; i < n; i++ {
		h, id, err := newHandle("u")
		require.NoError(t, err)
		sec, enc, ok := strings.Cut(h, ".")
		require.True(t, ok)
		require.Equal(t, b64.EncodeToString([]byte("u")), enc)
		if _, dup := secrets[sec]; dup {
			t.Fatalf("duplicate secret after %d", i)
		}
		secrets[sec] = struct{}{}
		if _, dup := ids[id]; dup {
			t.Fatalf("duplicate ID after %d", i)
		}
		ids[id] = struct{}{}
		require.Len(t, id, idLen)
		require.True(t, validID(id))
		require.NotContains(t, sec, id)
		raw, err := b64.DecodeString(sec)
		require.NoError(t, err)
		require.Len(t, raw, secretBytes)
		for j, b := range raw {
			for k := 0; k < 8; k++ {
				ones[j*8+k] += int(b>>k) & 1
			}
		}
	}
	// Each bit is Binomial(n, 1/2): sd = 158; allow 6 sd.
	for i, c := range ones {
		assert.InDelta(t, n/2, c, 950, "bit %d", i)
	}
}

func TestHandle(t *testing.T) {
	for _, uid := range []string{"42", "user:with:colons", "a.b.c", "ü/é"} {
		h, id, err := newHandle(uid)
		require.NoError(t, err)
		gotUID, gotID, err := ParseHandle(h)
		require.NoError(t, err)
		assert.Equal(t, uid, gotUID)
		assert.Equal(t, id, gotID)
	}
	good, id, err := newHandle("42")
	require.NoError(t, err)
	sec, _, _ := strings.Cut(good, ".")
	zero := strings.Repeat("A", 43)
	for name, h := range map[string]string{
		"empty":              "",
		"dot":                ".",
		"no dot":             sec,
		"no user":            sec + ".",
		"no secret":          ".NDI",
		"short secret":       "AAAA.NDI",
		"bad user":           zero + ".!!",
		"non-canonical user": zero + ".NDJ",
		"non-canonical sec":  strings.Repeat("A", 42) + "B.NDI",
		"the ID as a secret": id + ".NDI",
		"the ID alone":       id,
		"oversize":           zero + "." + strings.Repeat("A", maxHandleLen),
	} {
		_, _, err := ParseHandle(h)
		require.ErrorIs(t, err, ErrInvalidToken, name)
		if h != "" && h != "." {
			assert.NotContains(t, err.Error(), h, "%s: the error quotes the handle", name)
		}
	}
}

func FuzzParseHandle(f *testing.F) {
	h, _, _ := newHandle("42")
	f.Add(h)
	f.Add("x.y")
	f.Add(strings.Repeat("A", 42) + "B.NDJ")
	f.Fuzz(func(t *testing.T, h string) {
		uid, sid, err := ParseHandle(h)
		if err != nil {
			return
		}
		if !validID(sid) || uid == "" {
			t.Fatalf("%q parsed to %q, %q", h, uid, sid)
		}
		sec, _, _ := strings.Cut(h, ".")
		raw, _ := b64.DecodeString(sec)
		if b64.EncodeToString(raw)+"."+b64.EncodeToString([]byte(uid)) != h {
			t.Fatalf("%q is not canonical", h)
		}
	})
}

// Printing or logging Tokens shows no credential.
func TestTokensRedacted(t *testing.T) {
	h, _, err := newHandle("42")
	require.NoError(t, err)
	tok := Tokens{Handle: h, Refresh: rand.Text()}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("created", "tokens", tok)
	for _, s := range []string{fmt.Sprint(tok), fmt.Sprintf("%v %+v %#v %s", tok, tok, tok, tok), logged.String()} {
		assert.NotContains(t, s, tok.Handle)
		assert.NotContains(t, s, tok.Refresh)
		assert.Contains(t, s, "redacted")
	}
}

// TestCreateUniqueConcurrent creates sessions from many goroutines; every
// ID is distinct and listed.
func TestCreateUniqueConcurrent(t *testing.T) {
	e, s := newStore(t)
	const workers, each = 50, 20
	ids := map[string]bool{}
	for _, id := range createConcurrently(t, e, s, "u1", workers, each) {
		ids[id] = true
	}
	assert.Len(t, ids, workers*each)
	list, err := s.List(e.Ctx(), "u1")
	require.NoError(t, err)
	assert.Len(t, list, workers*each)
}
