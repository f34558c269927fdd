package keys

import "testing"

// TestEscapedTable checks the escaped table against its definition: the
// separator, the escape, the hash-tag braces, the glob characters and the
// ASCII control bytes, nothing else.
func TestEscapedTable(t *testing.T) {
	for i := 0; i < 256; i++ {
		b := byte(i)
		want := b < 0x20 || b == 0x7f || b == ':' || b == '%' || b == '{' || b == '}' ||
			b == '*' || b == '?' || b == '[' || b == ']' || b == '\\'
		if escaped(b) != want {
			t.Errorf("escaped(%#x) = %v, want %v", b, escaped(b), want)
		}
	}
}
